"""Records, pod commands, a namespace view and waiting, shared by kinetic-gke's tests
(imported by name; the tests' ``conftest.py`` puts this directory on ``sys.path``)."""

import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import msgspec
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from kinetic_gke import GKEBackend
from kinetic_protocol import JobRecord, JobState, JobStatus

__all__ = [
    "HOLD",
    "IMAGE",
    "PROJECT",
    "QUICK",
    "STORE",
    "BackendFactory",
    "Cluster",
    "RecordFactory",
    "alive",
    "make_record",
    "pid_in",
    "state_of",
    "wait_for",
    "wait_state",
]

PROJECT = "kinetic-tests"
IMAGE = "python:3.11-slim"
STORE = "gs://kinetic-tests-jobs"

HOLD = (
    sys.executable,
    "-c",
    "import os, time\nprint('started', os.getpid(), flush=True)\nwhile True: time.sleep(0.05)",
)
"""A pod command that announces itself (with its pid) and runs until it is killed."""
QUICK = (sys.executable, "-c", "print('done', flush=True)")
"""A pod command that succeeds at once."""

RecordFactory = Callable[..., JobRecord]
BackendFactory = Callable[..., GKEBackend]
Obj = dict[str, Any]
T = TypeVar("T")


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


def wait_for(
    check: Callable[[], T | bool | None], *, timeout: float = 30.0, message: str = "a condition"
) -> T:
    """Poll ``check`` until it returns something truthy, and return that; fail past ``timeout``."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        last = check()
        if last:
            return last  # type: ignore[return-value]
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout:g}s waiting for {message} (last: {last!r})")


def state_of(backend: GKEBackend, job: JobRecord) -> JobState:
    return backend.statuses([job])[job.job_id]


def wait_state(
    backend: GKEBackend, job: JobRecord, *wanted: JobStatus, timeout: float = 30.0
) -> JobState:
    """Poll until the job's status is one of ``wanted``; return that state."""
    return wait_for(
        lambda: (s := state_of(backend, job)).status in wanted and s,
        timeout=timeout,
        message=f"{job.job_id} to become {'/'.join(w.value for w in wanted)}",
    )


def alive(pid: int) -> bool:
    """Whether process ``pid`` exists and is not a zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


class Cluster:
    """Plain-dict reads of one namespace, with the admin client (not through any proxy)."""

    def __init__(self, api: client.ApiClient, namespace: str) -> None:
        self.api = api
        self.namespace = namespace
        self.core = client.CoreV1Api(api)
        self.batch = client.BatchV1Api(api)

    def jobs(self) -> list[Obj]:
        raw = self.batch.list_namespaced_job(self.namespace, _preload_content=False)
        return list(json.loads(raw.data)["items"])

    def job(self, name: str) -> Obj | None:
        try:
            raw = self.batch.read_namespaced_job(name, self.namespace, _preload_content=False)
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise
        data: Obj = json.loads(raw.data)
        return data

    def pods(self, selector: str = "") -> list[Obj]:
        raw = self.core.list_namespaced_pod(
            self.namespace, label_selector=selector, _preload_content=False
        )
        return list(json.loads(raw.data)["items"])

    def label_namespace(self, labels: dict[str, str]) -> None:
        self.core.patch_namespace(self.namespace, {"metadata": {"labels": labels}})

    def create(self, body: Obj) -> None:
        """Create a namespaced core/v1 object (ResourceQuota, ServiceAccount...)."""
        kind = body["kind"]
        create = {
            "ResourceQuota": self.core.create_namespaced_resource_quota,
            "ServiceAccount": self.core.create_namespaced_service_account,
        }[kind]
        create(self.namespace, body, _preload_content=False)


def pid_in(log: str) -> int:
    """The pid a ``HOLD`` pod printed."""
    for line in log.splitlines():
        if line.startswith("started "):
            return int(line.split()[1])
    raise AssertionError(f"no 'started <pid>' line in {log!r}")
