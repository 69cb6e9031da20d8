"""Fixtures for kinetic-pathways' cluster tests: the real control plane (with the
LeaderWorkerSet controller and its webhooks), a node agent with multi-host TPU pools, and
backends on the test's namespace."""

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kinetic_gke.k8s import ClusterConnection
from kinetic_pathways import PathwaysBackend
from kinetic_protocol import BackendSettings
from kinetic_testing.controlplane.cluster import ControlPlane
from kinetic_testing.controlplane.proxy import ApiProxy
from kinetic_testing.nodeagent import NodeAgent

STORE = "gs://kinetic-tests-jobs"


@pytest.fixture
def agent(node_agent: NodeAgent) -> NodeAgent:
    """The default GKE-like nodes (``node_agent``), with the multi-host TPU pools."""
    return node_agent


@pytest.fixture
def proxied_backend(
    real_k8s: ControlPlane, k8s_namespace: str, agent: NodeAgent, tmp_path: Path
) -> Iterator[tuple[PathwaysBackend, ApiProxy]]:
    """A backend whose API calls go through a recording proxy."""
    with ApiProxy(real_k8s) as proxy:
        config = proxy.kubeconfig(tmp_path / "proxy.json", context="proxy", namespace=k8s_namespace)
        connection = ClusterConnection.from_kubeconfig(
            context="proxy", namespace=k8s_namespace, config_file=config
        )
        settings = BackendSettings(
            project="kinetic-tests", namespace=k8s_namespace, store_uri=STORE
        )
        yield PathwaysBackend(settings, connection=connection), proxy
        connection.api_client.close()


def _backend(real_k8s: ControlPlane, namespace: str) -> Iterator[PathwaysBackend]:
    api: Any = real_k8s.api_client()
    settings = BackendSettings(project="kinetic-tests", namespace=namespace, store_uri=STORE)
    yield PathwaysBackend(settings, connection=ClusterConnection(api, namespace))
    api.close()


@pytest.fixture
def backend(
    real_k8s: ControlPlane, k8s_namespace: str, agent: NodeAgent
) -> Iterator[PathwaysBackend]:
    yield from _backend(real_k8s, k8s_namespace)


@pytest.fixture
def other_reader(
    real_k8s: ControlPlane, k8s_namespace: str, backend: PathwaysBackend
) -> Iterator[PathwaysBackend]:
    """A second backend on the same namespace, as another process polling the same jobs
    would have (its own connection and its own memory of states)."""
    yield from _backend(real_k8s, k8s_namespace)
