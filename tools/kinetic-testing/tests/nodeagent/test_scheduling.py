"""The scheduler role: node selectors, taints, extended resources, Unschedulable, gates."""

from __future__ import annotations

import pytest

from kinetic_gke.scheduling import scheduling_for
from kinetic_protocol import parse_accelerator
from kinetic_testing.nodeagent import NodeAgent, default_nodes

pytestmark = pytest.mark.realk8s

SLEEP = ["python", "-c", "import time; time.sleep(600)"]


def _spec(accelerator: str, *, spot: bool = False) -> dict:
    """A pod spec placed exactly as our GKE backend places ``accelerator``."""
    placed = scheduling_for(parse_accelerator(accelerator), spot=spot)
    container = {
        "name": "main",
        "image": "img",
        "command": SLEEP,
        "resources": {"requests": placed.requests, "limits": placed.limits},
    }
    return {
        "restartPolicy": "Never",
        "nodeSelector": placed.node_selector,
        "tolerations": placed.tolerations,
        "containers": [container],
    }


def _scheduled(pod: dict | None) -> dict | None:
    for cond in (pod or {}).get("status", {}).get("conditions") or []:
        if cond["type"] == "PodScheduled":
            return cond
    return None


@pytest.mark.parametrize(
    ("accelerator", "spot", "node"),
    [
        ("cpu", False, "cpu-0"),
        ("cpu", True, "cpu-spot-0"),
        ("gpu-l4", False, "gpu-l4-0"),
        ("gpu-l4-x2", True, "gpu-l4-spot-0"),
        ("tpu-v5e-1", False, "tpu-v5e-1x1-0"),
        ("tpu-v5e-4", False, "tpu-v5e-2x2-0"),
        ("tpu-v5e-8", False, "tpu-v5e-2x4-0"),
        ("tpu-v5e-16", False, "tpu-v5e-4x4-0"),
    ],
)
def test_backend_placement_lands_on_the_matching_pool(
    agent: NodeAgent, h, accelerator: str, spot: bool, node: str
) -> None:
    h.create_pod("p", _spec(accelerator, spot=spot))
    pod = h.wait(lambda: (p := h.pod("p")) and p.get("status", {}).get("phase") == "Running" and p)
    assert pod["spec"]["nodeName"] == node


def test_extended_resources_are_counted(agent: NodeAgent, h) -> None:
    for name in ("a", "b"):  # 2 + 2 of the L4 node's 4 GPUs
        h.create_pod(name, _spec("gpu-l4-x2"))
    h.wait(lambda: all((h.pod(n) or {}).get("spec", {}).get("nodeName") for n in "ab"))
    h.create_pod("c", _spec("gpu-l4"))
    cond = h.wait(lambda: (c := _scheduled(h.pod("c"))) and c["status"] == "False" and c)
    assert cond["reason"] == "Unschedulable"
    total = len(default_nodes())
    assert cond["message"].startswith(f"0/{total} nodes are available: ")
    assert "1 Insufficient nvidia.com/gpu" in cond["message"]
    assert h.pod("c")["status"]["phase"] == "Pending"
    # Freeing GPUs lets it schedule: retried when things change.
    h.core.delete_namespaced_pod("a", h.ns, _preload_content=False)
    pod = h.wait(lambda: (p := h.pod("c")) and p["spec"].get("nodeName") and p)
    assert pod["spec"]["nodeName"] == "gpu-l4-0"


def test_unschedulable_pod_gets_the_scheduler_condition(agent: NodeAgent, h) -> None:
    spec = _spec("gpu-l4")
    spec["containers"][0]["resources"] = {"limits": {"nvidia.com/gpu": "16"}}
    h.create_pod("huge", spec)
    cond = h.wait(lambda: (c := _scheduled(h.pod("huge"))) and c["status"] == "False" and c)
    assert cond["reason"] == "Unschedulable"
    assert "Insufficient nvidia.com/gpu" in cond["message"]
    first = cond["lastTransitionTime"]
    # The condition is not rewritten on every pass, so the backend can time it.
    assert _scheduled(h.pod("huge"))["lastTransitionTime"] == first


def test_taints_need_tolerations(agent: NodeAgent, h) -> None:
    spec = _spec("gpu-l4")
    spec["tolerations"] = []
    h.create_pod("untolerated", spec)
    cond = h.wait(lambda: (c := _scheduled(h.pod("untolerated"))) and c["status"] == "False" and c)
    assert "untolerated taint {nvidia.com/gpu: present}" in cond["message"]
    spot = _spec("cpu", spot=True)
    spot["tolerations"] = []
    h.create_pod("spot", spot)
    cond = h.wait(lambda: (c := _scheduled(h.pod("spot"))) and c["status"] == "False" and c)
    assert "cloud.google.com/gke-spot: true" in cond["message"]


def test_node_selector_without_match_is_unschedulable(agent: NodeAgent, h) -> None:
    spec = _spec("cpu")
    spec["nodeSelector"] = {"cloud.google.com/gke-accelerator": "nvidia-h100-80gb"}
    h.create_pod("nowhere", spec)
    cond = h.wait(lambda: (c := _scheduled(h.pod("nowhere"))) and c["status"] == "False" and c)
    assert "didn't match Pod's node affinity/selector" in cond["message"]


def test_gated_pods_are_left_alone(agent: NodeAgent, h) -> None:
    spec = {**_spec("cpu"), "schedulingGates": [{"name": "example.com/hold"}]}
    h.create_pod("gated", spec)
    h.create_pod("free", _spec("cpu"))
    h.wait(lambda: (h.pod("free") or {}).get("spec", {}).get("nodeName"))
    gated = h.pod("gated")
    assert not gated["spec"].get("nodeName")
    cond = _scheduled(gated)
    assert cond is None or cond["reason"] == "SchedulingGated"  # the apiserver's own condition
