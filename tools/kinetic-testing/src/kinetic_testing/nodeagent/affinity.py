"""Required inter-pod affinity and anti-affinity, as kube-scheduler's InterPodAffinity filter
applies them: a LeaderWorkerSet with an exclusive topology puts a group's pods in one node
pool and keeps other groups out of it, which is what makes a multi-host slice schedulable.

Only ``requiredDuringSchedulingIgnoredDuringExecution`` terms are honoured (preferred terms
only score nodes, and this scheduler takes the first node that fits).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from .api import Obj
from .nodes import NodeSpec
from .selectors import LabelSelector

__all__ = ["Placed", "affinity_reasons"]


@dataclass(frozen=True)
class Placed:
    """A pod that holds a node (bound, or assumed in this pass)."""

    pod: Obj
    node: str


def _terms(pod: Obj, kind: str) -> list[Obj]:
    affinity = (pod["spec"].get("affinity") or {}).get(kind) or {}
    return list(affinity.get("requiredDuringSchedulingIgnoredDuringExecution") or [])


def _matches(term: Obj, owner: Obj, other: Obj) -> bool:
    """Whether ``other`` is a pod ``term`` (a term of ``owner``) refers to."""
    namespaces = term.get("namespaces") or [owner["metadata"]["namespace"]]
    if other["metadata"]["namespace"] not in namespaces:
        return False
    return LabelSelector.from_structured(term.get("labelSelector")).matches(
        other["metadata"].get("labels")
    )


def _same_domain(key: str, node: NodeSpec, other: NodeSpec | None) -> bool:
    return other is not None and key in node.labels and node.labels[key] == other.labels.get(key)


def affinity_reasons(
    pod: Obj, node: NodeSpec, placed: Iterable[Placed], nodes: Mapping[str, NodeSpec]
) -> list[str]:
    """Empty if ``pod`` may go on ``node`` given where the others are, else the reasons."""
    others = [p for p in placed if p.pod["metadata"]["uid"] != pod["metadata"]["uid"]]
    for term in _terms(pod, "podAffinity"):
        key = term["topologyKey"]
        matching = [p for p in others if _matches(term, pod, p.pod)]
        if not matching and _matches(term, pod, pod):
            continue  # the first pod of a group may start its own domain
        if not any(_same_domain(key, node, nodes.get(p.node)) for p in matching):
            return ["node(s) didn't match pod affinity rules"]
    for term in _terms(pod, "podAntiAffinity"):
        key = term["topologyKey"]
        for other in others:
            if _matches(term, pod, other.pod) and _same_domain(key, node, nodes.get(other.node)):
                return ["node(s) didn't match pod anti-affinity rules"]
    for other in others:  # existing pods' anti-affinity against this one
        for term in _terms(other.pod, "podAntiAffinity"):
            key = term["topologyKey"]
            if _matches(term, other.pod, pod) and _same_domain(key, node, nodes.get(other.node)):
                return ["node(s) didn't satisfy existing pods anti-affinity rules"]
    return []
