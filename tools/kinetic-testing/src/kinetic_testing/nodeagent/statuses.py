"""The pod statuses a real kubelet (and pod GC) writes, for each way a pod ends.

Built on :mod:`.podstatus` (the container statuses of each outcome), plus what only a
disruption adds: a pod-level ``reason``/``message`` and a ``DisruptionTarget`` condition.
"""

from __future__ import annotations

from dataclasses import dataclass

from . import podstatus as ps
from .api import Obj

__all__ = [
    "DEADLINE_EXCEEDED",
    "EVICTED",
    "NODE_SHUTDOWN",
    "OOM_KILLED",
    "Outcome",
    "image_pull_message",
    "pod_gc_failed",
    "running",
    "terminated",
    "waiting",
]

_SHUTDOWN_MESSAGE = "Pod was terminated in response to imminent node shutdown."
_EVICTION_MESSAGE = (
    "The node was low on resource: memory. Threshold quantity: 100Mi, available: 42Mi."
)


@dataclass(frozen=True)
class Outcome:
    """How a forced end is reported: container reason, pod reason/message, disruption reason."""

    container_reason: str | None
    pod_reason: str | None = None
    message: str | None = None
    disruption: str | None = None


OOM_KILLED = Outcome("OOMKilled")
EVICTED = Outcome(None, "Evicted", _EVICTION_MESSAGE, "TerminationByKubelet")
NODE_SHUTDOWN = Outcome(None, "Terminated", _SHUTDOWN_MESSAGE, "TerminationByKubelet")
DEADLINE_EXCEEDED = Outcome(
    None, "DeadlineExceeded", "Pod was active on the node longer than the specified deadline"
)
"""A pod past its ``spec.activeDeadlineSeconds``: the kubelet stops it and fails it (no
disruption condition: nothing outside the pod ended it)."""


def image_pull_message(image: str, backoff: bool) -> str:
    if backoff:
        return f'Back-off pulling image "{image}"'
    return (
        f'failed to pull and unpack image "{image}": failed to resolve reference "{image}": '
        f"{image}: not found"
    )


def running(pod: Obj, started_at: str, pod_ip: str, restarts: int, last: Obj | None) -> Obj:
    status = dict(pod.get("status") or {})
    out = ps.running(pod, status, started_at, started_at, pod_ip, restarts, last)
    out["hostIP"] = "127.0.0.1"
    out["hostIPs"] = [{"ip": "127.0.0.1"}]
    return out


def waiting(
    pod: Obj, reason: str, message: str | None, now: str, restarts: int = 0, last: Obj | None = None
) -> Obj:
    status = dict(pod.get("status") or {})
    out = ps.waiting(pod, status, reason, message, now, restarts, last)
    out.setdefault("hostIP", "127.0.0.1")
    out.setdefault("startTime", now)
    return out


def terminated(
    pod: Obj,
    *,
    exit_code: int,
    started_at: str | None,
    now: str,
    outcome: Outcome | None,
    restarts: int = 0,
    message: str | None = None,
    last_state: Obj | None = None,
) -> Obj:
    """The terminal status after the container exited with ``exit_code`` (``last_state``: how
    its run before the last restart ended, which the kubelet keeps)."""
    status = dict(pod.get("status") or {})
    reason = "Completed" if exit_code == 0 else "Error"
    if outcome is not None and outcome.container_reason:
        reason = outcome.container_reason
    phase = "Succeeded" if exit_code == 0 and outcome is None else "Failed"
    out = ps.terminated(
        pod,
        status,
        exit_code=exit_code,
        reason=reason,
        started_at=started_at,
        now=now,
        phase=phase,
        message=message,
        restarts=restarts,
        last_state=last_state,
    )
    if outcome is not None and outcome.pod_reason:
        out["reason"], out["message"] = outcome.pod_reason, outcome.message
    if outcome is not None and outcome.disruption:
        out["conditions"] = ps.set_condition(
            out["conditions"], "DisruptionTarget", "True", now, outcome.disruption, outcome.message
        )
    return out


def pod_gc_failed(pod: Obj, now: str) -> Obj:
    """What KCM's pod GC writes before force-deleting a pod whose Node is gone."""
    status = dict(pod.get("status") or {})
    conds = ps.set_condition(
        status.get("conditions") or [],
        "DisruptionTarget",
        "True",
        now,
        "DeletionByPodGC",
        "PodGC: node no longer exists",
    )
    return {"phase": "Failed", "conditions": conds}
