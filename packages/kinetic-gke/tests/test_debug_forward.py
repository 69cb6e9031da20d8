"""The ``kubectl port-forward`` command GKEBackend names for a debug job.

Built against a stand-in connection: the real-control-plane tier has no kubelet streaming, so
``kubectl port-forward`` cannot run end to end there; ``kinetic.debug`` starts the command
(tested with a stand-in forwarder in packages/kinetic/tests/test_debug.py).
"""

import os
import stat
from pathlib import Path
from typing import Any, cast

import pytest
from gke_test_support import PROJECT, STORE, make_record

from kinetic_gke import GKEBackend
from kinetic_gke.k8s import ClusterConnection
from kinetic_gke.labels import job_selector
from kinetic_protocol import BackendError, BackendSettings, ConfigError

SETTINGS = BackendSettings(
    project=PROJECT, zone="us-central1-a", cluster="train", namespace="research", store_uri=STORE
)


class _Connection:
    """Just what ``port_forward_command`` reads of a ClusterConnection."""

    def __init__(self, pods: list[dict[str, Any]], context: str | None = None) -> None:
        self.namespace = "research"
        self.context = context
        self.kubeconfig: Path | None = None
        self.pods = pods
        self.selectors: list[str] = []

    def list_pods(self, selector: str) -> list[dict[str, Any]]:
        self.selectors.append(selector)
        return self.pods


def _pod(name: str, created: str, phase: str = "Running") -> dict[str, Any]:
    return {"metadata": {"name": name, "creationTimestamp": created}, "status": {"phase": phase}}


def _backend(connection: _Connection) -> GKEBackend:
    return GKEBackend(SETTINGS, connection=cast(ClusterConnection, connection))


@pytest.fixture
def kubectl_on_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A ``kubectl`` on PATH (the real one need not be installed)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "kubectl"
    fake.write_text("#!/bin/sh\nexit 0\n")
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", str(bin_dir))
    return fake


def test_gke_declares_debug_port_forwarding() -> None:
    assert GKEBackend.capabilities.debug_port_forward
    assert GKEBackend.capabilities.container_image


@pytest.mark.usefixtures("kubectl_on_path")
def test_the_command_forwards_to_the_newest_pod_in_the_jobs_namespace_and_context(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("KINETIC_KUBE_CONTEXT", raising=False)
    connection = _Connection(
        [
            _pod("job-1-old", "2026-11-22T10:00:00Z", "Failed"),
            _pod("job-1-new", "2026-11-22T11:00:00Z"),
        ]
    )
    command = _backend(connection).port_forward_command(make_record("job-1"), 5678, 5679)
    assert command == [
        "kubectl",
        "port-forward",
        "pod/job-1-new",
        "5678:5679",
        "-n",
        "research",
        "--context",
        f"gke_{PROJECT}_us-central1-a_train",
    ]
    assert connection.selectors == [job_selector("job-1")]


@pytest.mark.usefixtures("kubectl_on_path")
def test_the_command_uses_the_connections_own_context_and_kubeconfig(tmp_path: Path) -> None:
    connection = _Connection([_pod("p", "2026-11-22T11:00:00Z")], context="my-context")
    connection.kubeconfig = tmp_path / "kubeconfig"
    command = _backend(connection).port_forward_command(make_record(), 6000, 5678)
    assert command[-4:] == ["--context", "my-context", "--kubeconfig", str(tmp_path / "kubeconfig")]


@pytest.mark.usefixtures("kubectl_on_path")
@pytest.mark.parametrize("pods", [[], [_pod("p", "2026-11-22T11:00:00Z", "Pending")]])
def test_a_job_without_a_running_pod_has_nothing_to_forward_to(pods: list[dict[str, Any]]) -> None:
    with pytest.raises(BackendError, match="no running pod"):
        _backend(_Connection(pods)).port_forward_command(make_record(), 5678, 5678)


def test_a_missing_kubectl_is_a_config_error_saying_how_to_install_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    assert not any(Path(p, "kubectl").exists() for p in os.environ["PATH"].split(os.pathsep))
    backend = _backend(_Connection([_pod("p", "2026-11-22T11:00:00Z")]))
    with pytest.raises(ConfigError, match="gcloud components install kubectl"):
        backend.port_forward_command(make_record(), 5678, 5678)
