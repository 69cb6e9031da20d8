"""Fixtures for kinetic-gke's tests: job records, the Kubernetes API simulator, and a GKE
environment (simulator + fake-gcs-server) for tests that go through the ``kinetic`` client."""

import hashlib
import os
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from gke_test_support import PROJECT, STORE, BackendFactory, GkeEnv, RecordFactory, make_record

from kinetic_gke import GKEBackend
from kinetic_gke._k8s import KubeApi
from kinetic_protocol import BackendSettings
from kinetic_testing.k8s import KubernetesSimulator


@pytest.fixture
def record() -> RecordFactory:
    return make_record


@pytest.fixture
def sim() -> Iterator[KubernetesSimulator]:
    """A started simulator; the test fails if a body was refused or the simulator broke."""
    with KubernetesSimulator() as simulator:
        yield simulator
    assert simulator.validation_errors == []
    assert simulator.errors == []


@pytest.fixture
def make_backend(sim: KubernetesSimulator) -> BackendFactory:
    """``GKEBackend`` on the simulator through an injected client; options as keywords."""

    def build(**options: Any) -> GKEBackend:
        settings = BackendSettings(project=PROJECT, namespace="default", store_uri=STORE)
        return GKEBackend(settings, api=KubeApi(sim.api_client(), "default"), **options)

    return build


@pytest.fixture
def gke_env(
    sim: KubernetesSimulator, gcs_bucket: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[GkeEnv]:
    """Point the ``kinetic`` client's ``gke`` backend at the simulator and a fresh bucket.

    Pods run ``python -m kinetic_runtime`` as local processes with this environment, so
    ``python`` is this interpreter and they reach fake-gcs-server through
    ``STORAGE_EMULATOR_HOST``. Fails the test if the kubeconfig was written to.
    """
    import kinetic.backends

    for name in list(os.environ):
        if name.startswith("KINETIC_") or name == "GOOGLE_CLOUD_PROJECT":
            monkeypatch.delenv(name)
    kubeconfig = sim.kubeconfig(tmp_path / "kube" / "config.json", context="sim")
    before = hashlib.sha256(kubeconfig.read_bytes()).hexdigest()
    bin_dir = str(Path(sys.executable).parent)
    monkeypatch.setenv("PATH", bin_dir + os.pathsep + os.environ.get("PATH", ""))
    monkeypatch.setenv("KUBECONFIG", str(kubeconfig))
    monkeypatch.setenv("KINETIC_KUBE_CONTEXT", "sim")
    monkeypatch.setenv("KINETIC_STORE", gcs_bucket)
    monkeypatch.setenv("KINETIC_PROJECT", PROJECT)
    monkeypatch.setenv("KINETIC_GKE_POLL", "0.02,0.2")
    # Pods unpack their bundle under $TMPDIR: keep that inside this test's directory
    # (this process has fixed its own temporary directory already).
    tempfile.gettempdir()
    (tmp_path / "pod-tmp").mkdir()
    monkeypatch.setenv("TMPDIR", str(tmp_path / "pod-tmp"))
    monkeypatch.setenv("KINETIC_HOME", str(tmp_path / "kinetic-home"))
    monkeypatch.setenv("KINETIC_PROFILES_FILE", str(tmp_path / "profiles.json"))
    monkeypatch.setattr(kinetic.backends, "_cache", {})
    yield GkeEnv(sim, gcs_bucket, kubeconfig)
    assert hashlib.sha256(kubeconfig.read_bytes()).hexdigest() == before, "kubeconfig modified"
