"""Records, pod commands and constants shared by kinetic-gke's tests (imported by name; the
tests' ``conftest.py`` puts this directory on ``sys.path``)."""

import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec

from kinetic_gke import GKEBackend
from kinetic_protocol import JobRecord
from kinetic_testing.k8s import KubernetesSimulator

__all__ = [
    "HOLD",
    "IMAGE",
    "PROJECT",
    "QUICK",
    "STORE",
    "BackendFactory",
    "GkeEnv",
    "RecordFactory",
    "make_record",
]

PROJECT = "kinetic-tests"
IMAGE = "python:3.11-slim"
STORE = "gs://kinetic-tests-jobs"

HOLD = (
    sys.executable,
    "-c",
    "import time\nprint('started', flush=True)\nwhile True: time.sleep(0.05)",
)
"""A pod command that announces itself and runs until it is killed."""
QUICK = (sys.executable, "-c", "print('done', flush=True)")
"""A pod command that succeeds at once."""

RecordFactory = Callable[..., JobRecord]
BackendFactory = Callable[..., GKEBackend]


def make_record(job_id: str = "job-1", **fields: Any) -> JobRecord:
    """A stored-looking job record; ``fields`` override any of its fields."""
    record = JobRecord(
        job_id=job_id,
        backend="gke",
        project=PROJECT,
        cluster_name="kinetic-cluster",
        zone="us-central1-a",
        namespace="default",
        bucket_name=STORE.removeprefix("gs://"),
        k8s_name=job_id,
        image_uri=IMAGE,
        accelerator="cpu",
        func_name="train",
        display_name="train on cpu",
        created_at="2026-11-22T10:00:00+00:00",
    )
    return msgspec.structs.replace(record, **fields)


@dataclass(frozen=True)
class GkeEnv:
    """What a client-level test looks at: the cluster, the bucket (``gs://...``), the kubeconfig."""

    sim: KubernetesSimulator
    bucket: str
    kubeconfig: Path
