"""How a multi-host job ended, judged from inside its slice the way the pathways backend judges
it from a client (``kinetic_protocol.slices`` is the reading both share), so a slice that stops
itself records what a polling client would have recorded.

Only what the pods' first runs say is judged here: a host whose first run ended non-zero fails
the job, the lowest such host named; every host's first run that exited 0 is a success.
Anything the backend reads from more than that (a host that never started: its image, its
scheduling; a pod evicted before its container ran) leaves the outcome undecided here, and the
next poll of a client decides it. A test holds both judgements equal where this one decides.
"""

from __future__ import annotations

from typing import Any

from kinetic_protocol import JobState, JobStatus
from kinetic_protocol.slices import first_run, host_failure, replaced_host, run_state

__all__ = ["slice_outcome"]

Obj = dict[str, Any]


def _running(pod: Obj) -> bool:
    """Running as the backend reads it: nothing about the pod could fail the job yet."""
    status = pod.get("status") or {}
    if status.get("phase") != "Running" or pod["metadata"].get("deletionTimestamp"):
        return False
    containers = status.get("containerStatuses") or []
    return not any("waiting" in (container.get("state") or {}) for container in containers)


def slice_outcome(count: int, lws: Obj, pods: dict[int, Obj]) -> JobState | None:
    """The outcome of a slice of ``count`` hosts (``pods``: each host's newest pod), or None
    while it is not known here (a host still runs, or one is in a state only a client reads)."""
    replaced = replaced_host(lws, pods, count)
    if replaced is not None:
        return replaced
    succeeded = 0
    for index in range(count):
        pod = pods.get(index)
        run = first_run(pod)
        if run is None:
            if pod is None or not _running(pod):
                return None
            continue
        ended = run_state(run)
        if ended.status is JobStatus.FAILED:
            return host_failure(index, count, ended)
        succeeded += 1
    return JobState(status=JobStatus.SUCCEEDED) if succeeded == count else None
