"""The scheduler's filters and message, without a cluster."""

from __future__ import annotations

from decimal import Decimal

from kinetic_gke.scheduling import scheduling_for
from kinetic_protocol import parse_accelerator
from kinetic_testing.nodeagent import default_nodes
from kinetic_testing.nodeagent.env import container_argv, expand
from kinetic_testing.nodeagent.fit import fits, pod_requests, unschedulable_message


def _pod(accelerator: str, spot: bool = False) -> dict:
    placed = scheduling_for(parse_accelerator(accelerator), spot=spot)
    resources = {"requests": placed.requests, "limits": placed.limits}
    return {
        "spec": {
            "nodeSelector": placed.node_selector,
            "tolerations": placed.tolerations,
            "containers": [{"name": "main", "resources": resources}],
        }
    }


def test_every_accelerator_used_by_the_tests_fits_exactly_one_default_pool() -> None:
    names = ["cpu", "gpu-l4", "gpu-l4-x2", "gpu-t4"]
    names += ["tpu-v5e-1", "tpu-v5e-4", "tpu-v5e-8", "tpu-v5e-16"]
    for name in names:
        for spot in (False, True) if name in ("cpu", "gpu-l4") else (False,):
            pools = {
                n.labels["cloud.google.com/gke-nodepool"]
                for n in default_nodes()
                if not fits(_pod(name, spot), n, {})
            }
            assert len(pools) == 1, (name, spot, pools)


def test_a_required_node_affinity_takes_any_of_its_terms() -> None:
    nodes = {n.name: n for n in default_nodes()}
    pod = _pod("gpu-l4", spot=True)
    del pod["spec"]["nodeSelector"]
    terms = [
        {"matchExpressions": [
            {"key": "cloud.google.com/gke-accelerator", "operator": "In", "values": [gpu]},
            {"key": "cloud.google.com/gke-spot", "operator": "DoesNotExist"},
        ]}
        for gpu in ("nvidia-tesla-t4", "nvidia-l4")
    ]  # fmt: skip
    required = {"nodeSelectorTerms": terms}
    pod["spec"]["affinity"] = {
        "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": required}
    }
    assert fits(pod, nodes["gpu-l4-0"], {}) == []
    assert fits(pod, nodes["gpu-t4-0"], {}) == []
    assert fits(pod, nodes["gpu-l4-spot-0"], {}) == [
        "node(s) didn't match Pod's node affinity/selector"
    ]


def test_requests_sum_and_limits_stand_in() -> None:
    pod = {"spec": {"containers": [
        {"resources": {"limits": {"nvidia.com/gpu": "2"}}},
        {"resources": {"requests": {"cpu": "500m", "memory": "1Gi"}}},
    ]}}  # fmt: skip
    assert pod_requests(pod) == {
        "nvidia.com/gpu": Decimal(2),
        "cpu": Decimal("0.5"),
        "memory": Decimal(2**30),
    }


def test_message_counts_reasons_like_kube_scheduler() -> None:
    message = unschedulable_message(
        {"a": ["Insufficient nvidia.com/gpu"], "b": ["Insufficient nvidia.com/gpu"], "c": ["x"]}
    )
    assert message.startswith("0/3 nodes are available: 2 Insufficient nvidia.com/gpu, 1 x.")


def test_env_expansion_and_python_mapping() -> None:
    import sys

    assert expand("$(A)-$(B)-$$(A)", {"A": "1"}) == "1-$(B)-$(A)"
    argv = container_argv({"command": ["python3"], "args": ["-c", "$(X)"]}, {"X": "pass"})
    assert argv == [sys.executable, "-c", "pass"]
