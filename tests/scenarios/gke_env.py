"""The ``gke`` backend of the scenario suite: the Kubernetes API simulator and fake-gcs-server.

Imported by ``conftest.py``. The simulator runs each pod's command (``python -m
kinetic_runtime``) as a local process with this test's environment, so ``python`` must resolve
to this interpreter and the pod finds the fake GCS server through ``STORAGE_EMULATOR_HOST``.
"""

import hashlib
import os
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from kinetic_testing.k8s import KubernetesSimulator

__all__ = ["GKE_IMAGE", "GKE_PROJECT", "gke_scenario_env"]

GKE_PROJECT = "kinetic-scenarios"
GKE_IMAGE = "python:3.11-slim"
"""The custom image scenario jobs name; used as-is, so nothing is built."""
_CONTEXT = "sim"


@pytest.fixture
def gke_scenario_env(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, gcs_bucket: str
) -> Iterator[KubernetesSimulator]:
    """A fresh simulator and bucket, and the variables that point Kinetic's ``gke`` backend at
    them; fails the test if any body was refused or the simulator broke, or the kubeconfig was
    written to."""
    with KubernetesSimulator() as sim:
        kubeconfig = sim.kubeconfig(tmp_path / "gke-sim" / "kubeconfig.json", context=_CONTEXT)
        before = hashlib.sha256(kubeconfig.read_bytes()).hexdigest()
        bin_dir = str(Path(sys.executable).parent)
        monkeypatch.setenv("PATH", bin_dir + os.pathsep + os.environ.get("PATH", ""))
        monkeypatch.setenv("KUBECONFIG", str(kubeconfig))
        monkeypatch.setenv("KINETIC_KUBE_CONTEXT", _CONTEXT)
        monkeypatch.setenv("KINETIC_STORE", gcs_bucket)
        monkeypatch.setenv("KINETIC_PROJECT", GKE_PROJECT)
        monkeypatch.setenv("KINETIC_GKE_POLL", "0.02,0.2")
        # Pods unpack their bundle under $TMPDIR: keep that inside this test's directory
        # (this process has fixed its own temporary directory already).
        tempfile.gettempdir()
        (tmp_path / "pod-tmp").mkdir()
        monkeypatch.setenv("TMPDIR", str(tmp_path / "pod-tmp"))
        # Scripts run in subprocesses decorate with backend="gke" alone: name the image here.
        monkeypatch.setenv("KINETIC_CONTAINER_IMAGE", GKE_IMAGE)
        yield sim
    assert sim.validation_errors == [], "the gke backend sent a body a cluster would refuse"
    assert sim.errors == [], "the Kubernetes simulator failed"
    assert hashlib.sha256(kubeconfig.read_bytes()).hexdigest() == before, "kubeconfig modified"
