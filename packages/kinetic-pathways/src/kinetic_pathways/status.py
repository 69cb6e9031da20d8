"""Map a LeaderWorkerSet and the pods of its slice (plain API dicts) to a Kinetic ``JobState``.

Every host counts: the job is FAILED as soon as any host's first run ended badly, even while
the leader still runs, and SUCCEEDED only once every host's first run exited 0. A host's
first run is its container's ``state.terminated`` or, after Kubernetes restarted the container
(LWS pods always restart), its ``lastState.terminated``; the restarted runtime then waits.

Once Kinetic (a client, or the slice itself) has stopped a finished slice it records the
outcome on the LeaderWorkerSet (:data:`FINAL_STATE` and friends), so every later reader sees
the same reason without pods. The names and the reading of one host's run are
``kinetic_protocol.slices``, which the slice shares.

A host's pod that Kubernetes replaces (evicted, preempted, its node lost) comes back under the
same name, and may wait for a node for a long time; the first time every host runs, Kinetic
records which pod runs each (:data:`HOST_PODS`), so a replaced host is a failure at once.
"""

from datetime import UTC, datetime
from typing import Any

from kinetic_gke import status as pod_status
from kinetic_protocol import FailureCause, JobState, JobStatus
from kinetic_protocol.slices import (
    FINAL_CAUSE,
    FINAL_DETAIL,
    FINAL_EXIT_CODE,
    FINAL_STATE,
    HOST_PODS,
    LOG_TAIL_BYTES,
    LOG_TAIL_LINES,
    WORKER_INDEX,
    first_run,
    host_failure,
    host_of,
    log_tail_key,
    newest_by_host,
    recorded_state,
    replaced_host,
    run_state,
)

__all__ = [
    "FINAL_CAUSE",
    "FINAL_DETAIL",
    "FINAL_EXIT_CODE",
    "FINAL_STATE",
    "HOST_PODS",
    "LOG_TAIL_BYTES",
    "LOG_TAIL_LINES",
    "WORKER_INDEX",
    "host_of",
    "host_pods",
    "hosts_of",
    "log_tail_key",
    "newest_by_host",
    "recorded_hosts",
    "recorded_log",
    "recorded_state",
    "slice_state",
]

Obj = dict[str, Any]


def hosts_of(lws: Obj) -> int:
    return int(lws.get("spec", {}).get("leaderWorkerTemplate", {}).get("size") or 1)


def recorded_log(lws: Obj, host: int) -> str | None:
    """The end of ``host``'s output, as recorded when Kinetic stopped the slice."""
    annotations = lws.get("metadata", {}).get("annotations") or {}
    value = annotations.get(log_tail_key(host))
    return None if value is None else str(value)


def host_pods(pods: list[Obj]) -> list[str]:
    """The uid of the newest pod of each host, in host order."""
    return [pod["metadata"]["uid"] for _, pod in sorted(newest_by_host(pods).items())]


def recorded_hosts(lws: Obj) -> list[str] | None:
    value = (lws.get("metadata", {}).get("annotations") or {}).get(HOST_PODS)
    return None if not value else str(value).split(",")


def _host_state(pod: Obj | None, timeout: float, now: datetime | None) -> JobState:
    if pod is None:
        return JobState(status=JobStatus.PENDING, detail="waiting for its pod")
    terminated = first_run(pod)
    if terminated is not None:
        return run_state(terminated)
    if pod.get("status", {}).get("phase") == "Failed" or pod["metadata"].get("deletionTimestamp"):
        detail, code = pod_status.terminated_reason(pod)
        cause = pod_status.termination_cause(pod) if detail else FailureCause.PREEMPTED
        return JobState(
            status=JobStatus.FAILED,
            detail=detail or "its pod was deleted",
            exit_code=code,
            cause=cause,
        )
    return pod_status.pod_state(pod, timeout, now or datetime.now(UTC))


def slice_state(
    lws: Obj | None,
    pods: list[Obj],
    *,
    events: list[Obj],
    unschedulable_timeout: float,
    now: datetime | None = None,
) -> JobState:
    """The state of one multi-host job from its LeaderWorkerSet and its pods."""
    if lws is None or lws.get("metadata", {}).get("deletionTimestamp"):
        return JobState(status=JobStatus.NOT_FOUND)
    return recorded_state(lws) or _hosts_state(lws, pods, events, unschedulable_timeout, now)


def _hosts_state(
    lws: Obj, pods: list[Obj], events: list[Obj], timeout: float, now: datetime | None
) -> JobState:
    """FAILED if any host failed (the lowest such host named), SUCCEEDED if all succeeded."""
    count = hosts_of(lws)
    newest = newest_by_host(pods)
    replaced = replaced_host(lws, newest, count)
    if replaced is not None:
        return replaced
    if not newest and events:
        message = (events[-1].get("message") or "").strip()[:300]
        return JobState(status=JobStatus.PENDING, detail=f"FailedCreate: {message}")
    hosts = [_host_state(newest.get(i), timeout, now) for i in range(count)]
    for index, host in enumerate(hosts):
        if host.status is JobStatus.FAILED:
            return host_failure(index, count, host)
    if all(host.status is JobStatus.SUCCEEDED for host in hosts):
        return JobState(status=JobStatus.SUCCEEDED)
    waiting = [(i, h) for i, h in enumerate(hosts) if h.status is JobStatus.PENDING]
    if not waiting:
        return JobState(status=JobStatus.RUNNING)
    index, host = waiting[0]
    detail = f"host {index} of {count}: {host.detail}" if host.detail else ""
    return JobState(status=JobStatus.PENDING, detail=detail)
