"""Registering the nodes: an agent finds the Nodes an earlier one left (one agent per test on
a session's control plane) and refreshes their status alone, unless a test changed them."""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from kinetic_testing.controlplane.cluster import ControlPlane
from kinetic_testing.nodeagent import NodeAgent, base_host_env
from kinetic_testing.nodeagent.nodes import default_nodes

pytestmark = pytest.mark.realk8s


def _agent(plane: ControlPlane, tmp_path: Path, name: str) -> NodeAgent:
    return NodeAgent(plane.api_client, workdir=tmp_path / name, host_env=base_host_env(os.environ))


@pytest.fixture
def node_writes(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """Every Node create, patch and status patch any client sends, by kind."""
    calls: Counter[str] = Counter()
    for method in ("create_node", "patch_node", "patch_node_status"):
        real = getattr(client.CoreV1Api, method)

        def counted(
            self: Any, *args: Any, _real: Any = real, _name: str = method, **kw: Any
        ) -> Any:
            calls[_name] += 1
            return _real(self, *args, **kw)

        monkeypatch.setattr(client.CoreV1Api, method, counted)
    return calls


def _ready(node: client.V1Node) -> bool:
    return any(c.type == "Ready" and c.status == "True" for c in node.status.conditions or [])


def _nodes_ready(plane: ControlPlane, log_port: int) -> bool:
    names = {spec.name for spec in default_nodes()}
    api = plane.api_client()
    nodes = [n for n in client.CoreV1Api(api).list_node().items if n.metadata.name in names]
    api.close()
    return len(nodes) == len(names) and all(
        _ready(node) and node.status.daemon_endpoints.kubelet_endpoint.port == log_port
        for node in nodes
    )


def test_an_agent_writes_no_node_an_earlier_agent_left_current(
    real_k8s: ControlPlane, tmp_path: Path, node_writes: Counter[str]
) -> None:
    with _agent(real_k8s, tmp_path, "first") as first:
        port = first.log_port
    node_writes.clear()
    with _agent(real_k8s, tmp_path, "second") as agent:
        assert agent.errors == [] and agent.log_port == port  # its logs where the Nodes say
    assert node_writes == Counter()
    assert _nodes_ready(real_k8s, port)


def test_an_agent_serving_logs_elsewhere_refreshes_only_the_status_of_the_nodes(
    real_k8s: ControlPlane, tmp_path: Path, node_writes: Counter[str]
) -> None:
    with _agent(real_k8s, tmp_path, "first") as first:  # holds its log port meanwhile
        node_writes.clear()
        with _agent(real_k8s, tmp_path, "second") as second:
            assert second.errors == [] and second.log_port != first.log_port
            assert _nodes_ready(real_k8s, second.log_port)
    assert node_writes == Counter({"patch_node_status": len(default_nodes())})


def test_a_node_a_test_tainted_or_cordoned_is_registered_again_as_its_spec_says(
    real_k8s: ControlPlane, tmp_path: Path, node_writes: Counter[str]
) -> None:
    with _agent(real_k8s, tmp_path, "first"):
        pass
    api = real_k8s.api_client()
    core = client.CoreV1Api(api)
    core.patch_node("cpu-0", {"spec": {"taints": [{"key": "x", "effect": "NoSchedule"}]}})
    core.patch_node("cpu-spot-0", {"spec": {"unschedulable": True}})
    node_writes.clear()
    with _agent(real_k8s, tmp_path, "second"):
        pass
    assert node_writes["patch_node"] == 2  # those two only
    cpu, spot = core.read_node("cpu-0"), core.read_node("cpu-spot-0")
    api.close()
    assert cpu.spec.taints is None
    assert [t.key for t in spot.spec.taints or []] == [
        dict(t)["key"] for spec in default_nodes() if spec.name == "cpu-spot-0" for t in spec.taints
    ]


def test_an_agent_keeps_its_connections_open_between_calls(
    real_k8s: ControlPlane, tmp_path: Path, node_writes: Counter[str], tls_handshakes: list[str]
) -> None:
    with _agent(real_k8s, tmp_path, "first"):  # holds its log port: the Nodes need new status
        tls_handshakes.clear()
        node_writes.clear()
        with _agent(real_k8s, tmp_path, "counted") as agent:
            assert agent.errors == []
        handshakes = len(tls_handshakes)
    calls = sum(node_writes.values()) + len(default_nodes())  # and a Lease renewal each
    # One per registration thread, the pod watch and the reconcile loop: not one per call.
    assert calls >= 2 * len(default_nodes()) and handshakes <= 8, (
        f"{handshakes} TLS connections opened for {calls} calls"
    )


def test_a_node_no_longer_ready_gets_its_status_again(
    real_k8s: ControlPlane, tmp_path: Path, node_writes: Counter[str]
) -> None:
    """What the node lifecycle controller does to a node whose agent went away (its Ready
    condition turns Unknown) is undone by the next agent, for that node only."""
    with _agent(real_k8s, tmp_path, "first") as first:
        port = first.log_port
    api = real_k8s.api_client()
    node = client.CoreV1Api(api).read_node("cpu-0")
    unknown = [
        {**c.to_dict(), "status": "Unknown"} if c.type == "Ready" else c.to_dict()
        for c in node.status.conditions
    ]
    client.CoreV1Api(api).patch_node_status(
        "cpu-0", {"status": {"conditions": [api.sanitize_for_serialization(c) for c in unknown]}}
    )
    api.close()
    node_writes.clear()
    with _agent(real_k8s, tmp_path, "second") as agent:
        assert agent.errors == [] and agent.log_port == port
    assert node_writes == Counter({"patch_node_status": 1})
    assert _nodes_ready(real_k8s, port)
