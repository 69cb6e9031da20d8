"""Fixtures for kinetic-gke's tests: job records, and the real control plane with a node agent.

Each cluster test gets its own namespace (``k8s_namespace``), a node agent that schedules and
runs its pods (``agent``), a plain-dict view of that namespace (``cluster``), and backends on
it (``make_backend``, optionally through the recording, fault-injecting ``ApiProxy``).
"""

import functools
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from gke_test_support import PROJECT, STORE, BackendFactory, Cluster, RecordFactory, make_record

from kinetic_gke import GKEBackend
from kinetic_gke.k8s import ClusterConnection
from kinetic_protocol import BackendSettings
from kinetic_testing.controlplane.cluster import ControlPlane
from kinetic_testing.controlplane.proxy import ApiProxy
from kinetic_testing.nodeagent import NodeAgent


@pytest.fixture
def record(request: pytest.FixtureRequest) -> RecordFactory:
    """``make_record``; in a cluster test, its records name the test's namespace."""
    if "k8s_namespace" not in request.fixturenames:
        return make_record
    namespace = request.getfixturevalue("k8s_namespace")
    return functools.partial(make_record, namespace=namespace)


@pytest.fixture
def agent(node_agent: NodeAgent) -> NodeAgent:
    """The default GKE-like nodes (``node_agent``), by the name these tests use."""
    return node_agent


@pytest.fixture
def cluster(real_k8s: ControlPlane, k8s_namespace: str) -> Iterator[Cluster]:
    api = real_k8s.api_client()
    yield Cluster(api, k8s_namespace)
    api.close()


@pytest.fixture
def proxy(real_k8s: ControlPlane) -> Iterator[ApiProxy]:
    """A recording, fault-injecting proxy in front of the API server."""
    with ApiProxy(real_k8s) as api_proxy:
        yield api_proxy


@pytest.fixture
def make_backend(
    real_k8s: ControlPlane,
    k8s_namespace: str,
    agent: NodeAgent,
    tmp_path: Path,
) -> Iterator[BackendFactory]:
    """``GKEBackend`` on this test's namespace; ``via=proxy`` sends its calls through
    ``proxy`` (by a kubeconfig naming it); other options are passed on as keywords."""
    clients: list[Any] = []

    def build(*, via: ApiProxy | None = None, **options: Any) -> GKEBackend:
        if via is None:
            api = real_k8s.api_client()
            connection = ClusterConnection(api, k8s_namespace)
        else:
            config = via.kubeconfig(
                tmp_path / f"proxy-{len(clients)}.json", context="proxy", namespace=k8s_namespace
            )
            connection = ClusterConnection.from_kubeconfig(
                context="proxy", namespace=k8s_namespace, config_file=config
            )
        clients.append(connection.api_client)
        settings = BackendSettings(
            project=PROJECT,
            zone="us-central1-a",
            cluster="kinetic-cluster",
            namespace=k8s_namespace,
            store_uri=STORE,
        )
        return GKEBackend(settings, connection=connection, **options)

    yield build
    for api in clients:
        api.close()
