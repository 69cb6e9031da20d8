"""How a multi-host job ended, read from its LeaderWorkerSet and its pods (plain API dicts) the
way the pathways backend reads them (``kinetic_pathways.status``), so a slice that stops itself
records what a polling client would have recorded.

Only what the pods' first runs say is read: a host whose first run ended non-zero fails the
job, the lowest such host named; every host's first run that exited 0 is a success. Anything
the backend reads from more than that (a host that never started: its image, its scheduling;
a pod evicted before its container ran) leaves the outcome undecided here, and the next poll
of a client decides it. A test holds both readings equal on the cases this one decides.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

__all__ = [
    "HOST_PODS",
    "WORKER_INDEX",
    "SliceOutcome",
    "first_run",
    "host_of",
    "newest_by_host",
    "slice_outcome",
]

Obj = dict[str, Any]
WORKER_INDEX = "leaderworkerset.sigs.k8s.io/worker-index"
HOST_PODS = "kinetic.dev/host-pods"
"""A client's record of the pods that ran hosts 0..N-1 (uids, comma-separated)."""
REPLACED_EXIT = 3
"""``kinetic_runtime.main``'s exit status for a host started again in a new pod."""
TIMEOUT_EXIT = 4
"""``kinetic_runtime.deadline``'s exit status for a run ended at its timeout."""
REPLACED = "its pod was replaced after the host had started (evicted, preempted or node lost)"


@dataclass(frozen=True)
class SliceOutcome:
    """A finished slice's state, as ``kinetic_protocol.JobState`` would hold it."""

    status: Literal["SUCCEEDED", "FAILED"]
    detail: str = ""
    exit_code: int | None = None
    cause: str = ""
    """A ``kinetic_protocol.FailureCause`` value; empty for a success."""


def host_of(pod: Obj) -> int:
    return int((pod["metadata"].get("labels") or {}).get(WORKER_INDEX, "0") or 0)


def newest_by_host(pods: list[Obj]) -> dict[int, Obj]:
    newest: dict[int, Obj] = {}
    for pod in sorted(pods, key=lambda p: p["metadata"].get("creationTimestamp") or ""):
        newest[host_of(pod)] = pod
    return newest


def first_run(pod: Obj | None) -> Obj | None:
    """How the container's first run ended (its ``terminated`` state), if it has: once
    Kubernetes restarted it (a LeaderWorkerSet's pods always restart), its last state."""
    for container in ((pod or {}).get("status") or {}).get("containerStatuses") or []:
        for state in (container.get("lastState") or {}, container.get("state") or {}):
            if "terminated" in state:
                terminated: Obj = state["terminated"]
                return terminated
    return None


def _ended(terminated: Obj) -> SliceOutcome:
    code = terminated.get("exitCode")
    if code == 0:
        return SliceOutcome("SUCCEEDED")
    if code == REPLACED_EXIT:
        return SliceOutcome("FAILED", REPLACED, code, "preempted")
    reason = terminated.get("reason") or ""
    text = f"{reason}, exit {code}" if reason not in ("", "Error", "Completed") else f"exit {code}"
    if code == TIMEOUT_EXIT:
        return SliceOutcome("FAILED", f"ran past its timeout, {text}", code, "timeout")
    return SliceOutcome("FAILED", text, code, "oom" if reason == "OOMKilled" else "exit")


def _running(pod: Obj) -> bool:
    """Running as the backend reads it: nothing about the pod could fail the job yet."""
    status = pod.get("status") or {}
    if status.get("phase") != "Running" or pod["metadata"].get("deletionTimestamp"):
        return False
    containers = status.get("containerStatuses") or []
    return not any("waiting" in (container.get("state") or {}) for container in containers)


def _replaced_host(lws: Obj, pods: dict[int, Obj]) -> int | None:
    recorded = ((lws.get("metadata") or {}).get("annotations") or {}).get(HOST_PODS)
    for index, uid in enumerate(str(recorded).split(",") if recorded else []):
        if ((pods.get(index) or {}).get("metadata") or {}).get("uid") != uid:
            return index
    return None


def slice_outcome(count: int, lws: Obj, pods: dict[int, Obj]) -> SliceOutcome | None:
    """The outcome of a slice of ``count`` hosts (``pods``: each host's newest pod), or None
    while it is not known here (a host still runs, or one is in a state only a client reads)."""
    replaced = _replaced_host(lws, pods)
    if replaced is not None:
        return SliceOutcome("FAILED", f"host {replaced} of {count}: {REPLACED}", None, "preempted")
    succeeded = 0
    for index in range(count):
        pod = pods.get(index)
        run = first_run(pod)
        if run is None:
            if pod is None or not _running(pod):
                return None
            continue
        ended = _ended(run)
        if ended.status == "FAILED":
            detail = f"host {index} of {count}: {ended.detail}".rstrip(": ")
            return SliceOutcome("FAILED", detail, ended.exit_code, ended.cause)
        succeeded += 1
    return SliceOutcome("SUCCEEDED") if succeeded == count else None
