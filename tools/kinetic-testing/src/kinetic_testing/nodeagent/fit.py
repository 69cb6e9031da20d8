"""Does a pod fit a node? The subset of kube-scheduler's filters our pods exercise.

Filters: node selector, required node affinity (any of its terms; each term's expressions
all), NoSchedule/NoExecute taints vs tolerations, and resource requests
(cpu, memory, extended resources) against allocatable minus what non-terminal pods already
bound there request. A pod that fits nowhere gets kube-scheduler's style of message,
``0/N nodes are available: 2 Insufficient google.com/tpu, 1 node(s) didn't match ...``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from decimal import Decimal
from typing import Any

from kubernetes.utils.quantity import parse_quantity as _parse_quantity

from .nodes import NodeSpec
from .selectors import LabelSelector

__all__ = ["fits", "pod_requests", "unschedulable_message"]


def parse_quantity(value: object) -> Decimal:
    """``kubernetes.utils`` quantity parsing ("500m", "1Gi", 4), typed."""
    return Decimal(_parse_quantity(value))  # type: ignore[no-untyped-call]


Obj = dict[str, Any]


def pod_requests(pod: Obj) -> dict[str, Decimal]:
    """Summed container requests (a limit stands in for a missing request, as in the API)."""
    total: dict[str, Decimal] = {}
    for container in pod["spec"].get("containers") or []:
        resources = container.get("resources") or {}
        wanted = {**(resources.get("limits") or {}), **(resources.get("requests") or {})}
        for name, value in wanted.items():
            total[name] = total.get(name, Decimal(0)) + parse_quantity(value)
    for container in pod["spec"].get("initContainers") or []:
        resources = container.get("resources") or {}
        wanted = {**(resources.get("limits") or {}), **(resources.get("requests") or {})}
        for name, value in wanted.items():  # init containers run first: max, not sum
            total[name] = max(total.get(name, Decimal(0)), parse_quantity(value))
    return total


def _tolerated(taint: Mapping[str, str], tolerations: Iterable[Obj]) -> bool:
    for tol in tolerations:
        if tol.get("effect") and tol["effect"] != taint.get("effect"):
            continue
        key = tol.get("key")
        if tol.get("operator") == "Exists":
            if not key or key == taint["key"]:
                return True
        elif key == taint["key"] and (tol.get("value") or "") == (taint.get("value") or ""):
            return True
    return False


def _affinity_fits(pod: Obj, node: NodeSpec) -> bool:
    """Whether ``node`` meets the pod's required node affinity (none: any node does)."""
    affinity = (pod["spec"].get("affinity") or {}).get("nodeAffinity") or {}
    required = affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
    if not required:
        return True
    return any(
        LabelSelector.from_structured(
            {"matchExpressions": term.get("matchExpressions") or []}
        ).matches(node.labels)
        for term in required.get("nodeSelectorTerms") or []
    )


def _why_not(pod: Obj, node: NodeSpec, used: Mapping[str, Decimal]) -> list[str]:
    """The scheduler's reasons this node is filtered out (empty: it fits)."""
    spec = pod["spec"]
    selector = spec.get("nodeSelector") or {}
    if any(node.labels.get(k) != v for k, v in selector.items()) or not _affinity_fits(pod, node):
        return ["node(s) didn't match Pod's node affinity/selector"]
    tolerations = spec.get("tolerations") or []
    for taint in node.taints:
        if taint.get("effect") in ("NoSchedule", "NoExecute") and not _tolerated(
            taint, tolerations
        ):
            value = f": {taint['value']}" if taint.get("value") else ""
            return [f"node(s) had untolerated taint {{{taint['key']}{value}}}"]
    reasons = []
    requests = pod_requests(pod)
    requests["pods"] = Decimal(1)
    for name, amount in sorted(requests.items()):
        if amount <= 0:
            continue
        allocatable = parse_quantity(node.capacity.get(name, "0"))
        if used.get(name, Decimal(0)) + amount > allocatable:
            reasons.append("Too many pods" if name == "pods" else f"Insufficient {name}")
    return reasons


def fits(pod: Obj, node: NodeSpec, used: Mapping[str, Decimal]) -> list[str]:
    """Empty if ``pod`` fits ``node`` given ``used`` resources, else the reasons it doesn't."""
    return _why_not(pod, node, used)


def unschedulable_message(reasons_per_node: Mapping[str, list[str]]) -> str:
    """kube-scheduler's FitError text for a pod that fits none of the nodes."""
    counts: Counter[str] = Counter()
    for reasons in reasons_per_node.values():
        counts.update(set(reasons))
    parts = ", ".join(f"{n} {reason}" for reason, n in sorted(counts.items()))
    total = len(reasons_per_node)
    return (
        f"0/{total} nodes are available: {parts}. preemption: 0/{total} nodes are available: "
        f"{total} Preemption is not helpful for scheduling."
    )
