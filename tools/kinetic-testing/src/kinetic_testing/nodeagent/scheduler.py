"""The scheduler role: bind pending pods to a node they fit, or say why none fits.

Like kube-scheduler it assumes a pod onto its node as soon as it binds (the watch catches up
later), skips pods with ``schedulingGates``, and writes ``PodScheduled=False/Unschedulable``
only when the verdict changes, keeping ``lastTransitionTime`` (our backend times out on it).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from decimal import Decimal

from .affinity import Placed, affinity_reasons
from .api import Kube, Obj, describe, is_gone, now_rfc3339
from .fit import fits, pod_requests, unschedulable_message
from .nodes import NodeSpec

__all__ = ["Scheduler", "is_terminal"]

_SCHEDULER = "default-scheduler"


def is_terminal(pod: Obj) -> bool:
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")


def _condition(pod: Obj, kind: str) -> Obj | None:
    for cond in (pod.get("status") or {}).get("conditions") or []:
        if cond.get("type") == kind:
            return dict(cond)
    return None


class Scheduler:
    """Stateless but for pods it assumed onto nodes before the watch reported the binding."""

    def __init__(
        self,
        kube: Kube,
        nodes: Mapping[str, NodeSpec],
        is_alive: Callable[[str], bool],
        report: Callable[[str], None],
    ) -> None:
        self._kube = kube
        self._nodes = nodes
        self._is_alive = is_alive
        self._report = report
        self._assumed: dict[str, str] = {}

    def _usage(self, pods: list[Obj]) -> dict[str, dict[str, Decimal]]:
        used: dict[str, dict[str, Decimal]] = {name: {} for name in self._nodes}
        for pod in pods:
            node = pod["spec"].get("nodeName") or self._assumed.get(pod["metadata"]["uid"])
            if node not in used or is_terminal(pod):
                continue
            for name, amount in {**pod_requests(pod), "pods": Decimal(1)}.items():
                used[node][name] = used[node].get(name, Decimal(0)) + amount
        return used

    def schedule(self, all_pods: Iterable[Obj]) -> None:
        """One pass over every pod that waits for a node."""
        pods = list(all_pods)
        live = {p["metadata"]["uid"] for p in pods if not p["spec"].get("nodeName")}
        self._assumed = {uid: n for uid, n in self._assumed.items() if uid in live}
        waiting = sorted(
            (p for p in pods if self._wants_node(p)),
            key=lambda p: p["metadata"].get("creationTimestamp") or "",
        )
        if not waiting:
            return
        used = self._usage(pods)
        placed = [
            Placed(p, node)
            for p in pods
            if not is_terminal(p)
            and (node := p["spec"].get("nodeName") or self._assumed.get(p["metadata"]["uid"]))
        ]
        for pod in waiting:
            self._place(pod, used, placed)

    def _wants_node(self, pod: Obj) -> bool:
        spec = pod["spec"]
        return (
            not spec.get("nodeName")
            and pod["metadata"]["uid"] not in self._assumed
            and not pod["metadata"].get("deletionTimestamp")
            and not spec.get("schedulingGates")
            and spec.get("schedulerName", _SCHEDULER) == _SCHEDULER
            and not is_terminal(pod)
        )

    def _place(self, pod: Obj, used: dict[str, dict[str, Decimal]], placed: list[Placed]) -> None:
        meta = pod["metadata"]
        reasons: dict[str, list[str]] = {}
        for name, spec in self._nodes.items():
            if not self._is_alive(name):
                continue
            why = fits(pod, spec, used[name]) or affinity_reasons(pod, spec, placed, self._nodes)
            if why:
                reasons[name] = why
                continue
            try:
                self._kube.bind(meta["namespace"], meta["name"], name)
            except Exception as exc:
                if not is_gone(exc):
                    self._report(f"bind {meta['namespace']}/{meta['name']}: {describe(exc)}")
                return
            self._assumed[meta["uid"]] = name
            placed.append(Placed(pod, name))
            for res, amount in {**pod_requests(pod), "pods": Decimal(1)}.items():
                used[name][res] = used[name].get(res, Decimal(0)) + amount
            return
        self._mark_unschedulable(pod, unschedulable_message(reasons))

    def _mark_unschedulable(self, pod: Obj, message: str) -> None:
        current = _condition(pod, "PodScheduled")
        if current and current.get("status") == "False" and current.get("message") == message:
            return
        since = now_rfc3339()
        if current and current.get("status") == "False":
            since = current.get("lastTransitionTime") or since
        condition = {
            "type": "PodScheduled",
            "status": "False",
            "reason": "Unschedulable",
            "message": message,
            "lastProbeTime": None,
            "lastTransitionTime": since,
        }
        meta = pod["metadata"]
        try:
            self._kube.patch_pod_status(
                meta["namespace"], meta["name"], {"conditions": [condition]}, meta["uid"]
            )
        except Exception as exc:
            if not is_gone(exc):
                self._report(
                    f"mark {meta['namespace']}/{meta['name']} unschedulable: {describe(exc)}"
                )
