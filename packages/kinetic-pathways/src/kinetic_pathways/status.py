"""Map a LeaderWorkerSet and the pods of its slice (plain API dicts) to a Kinetic ``JobState``.

Every host counts: the job is FAILED as soon as any host's first run ended badly, even while
the leader still runs, and SUCCEEDED only once every host's first run exited 0. A host's
first run is its container's ``state.terminated`` or, after Kubernetes restarted the container
(LWS pods always restart), its ``lastState.terminated``; the restarted runtime then waits.

Once Kinetic has stopped a finished slice it records the outcome on the LeaderWorkerSet
(:data:`FINAL_STATE` and friends), so every later reader sees the same reason without pods.

A host's pod that Kubernetes replaces (evicted, preempted, its node lost) comes back under the
same name, and may wait for a node for a long time; the first time every host runs, Kinetic
records which pod runs each (:data:`HOST_PODS`), so a replaced host is a failure at once.
"""

from datetime import UTC, datetime
from typing import Any

from kinetic_gke import status as pod_status
from kinetic_protocol import FailureCause, JobState, JobStatus

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
    "newest_by_host",
    "recorded_hosts",
    "log_tail_key",
    "recorded_log",
    "recorded_state",
    "slice_state",
]

Obj = dict[str, Any]
WORKER_INDEX = "leaderworkerset.sigs.k8s.io/worker-index"
FINAL_STATE = "kinetic.dev/final-state"
FINAL_DETAIL = "kinetic.dev/final-detail"
FINAL_EXIT_CODE = "kinetic.dev/final-exit-code"
FINAL_CAUSE = "kinetic.dev/final-cause"
HOST_PODS = "kinetic.dev/host-pods"
"""The uids of the pods that ran hosts 0..N-1, comma-separated, recorded once all ran."""
LOG_TAIL_LINES = 200
LOG_TAIL_BYTES = 16_000
"""How much of each host's output is kept on a stopped slice (annotations total < 256 KiB)."""
_CAUSES = frozenset(cause.value for cause in FailureCause)
"""Causes this Kinetic knows; one recorded by a newer Kinetic reads as none."""
_REPLACED_EXIT = 3
"""The runtime's exit status when it finds its host was started before in another pod."""
_TIMEOUT_EXIT = 4
"""The runtime's exit status when it ended its run at the attempt's timeout."""
_REPLACED = "its pod was replaced after the host had started (evicted, preempted or node lost)"


def host_of(pod: Obj) -> int:
    """The host index of one of the slice's pods (0 for the leader)."""
    return int(pod["metadata"].get("labels", {}).get(WORKER_INDEX, "0") or 0)


def hosts_of(lws: Obj) -> int:
    return int(lws.get("spec", {}).get("leaderWorkerTemplate", {}).get("size") or 1)


def log_tail_key(host: int) -> str:
    return f"kinetic.dev/log-tail-{host}"


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


def newest_by_host(pods: list[Obj]) -> dict[int, Obj]:
    """Each host's newest pod, by host index."""
    newest: dict[int, Obj] = {}
    for pod in sorted(pods, key=lambda p: p["metadata"].get("creationTimestamp") or ""):
        newest[host_of(pod)] = pod
    return newest


def recorded_state(lws: Obj) -> JobState | None:
    """The outcome Kinetic recorded on a slice it stopped, if any."""
    annotations = lws.get("metadata", {}).get("annotations") or {}
    if FINAL_STATE not in annotations:
        return None
    code = annotations.get(FINAL_EXIT_CODE)
    cause = annotations.get(FINAL_CAUSE, "")
    return JobState(
        status=JobStatus(annotations[FINAL_STATE]),
        detail=annotations.get(FINAL_DETAIL, ""),
        exit_code=int(code) if code not in (None, "") else None,
        cause=FailureCause(cause) if cause in _CAUSES else None,
    )


def _first_run(pod: Obj) -> Obj | None:
    """How the container's first run ended, if it has."""
    for container in pod.get("status", {}).get("containerStatuses") or []:
        for state in (container.get("lastState") or {}, container.get("state") or {}):
            if "terminated" in state:
                terminated: Obj = state["terminated"]
                return terminated
    return None


def _ended(terminated: Obj) -> JobState:
    code = terminated.get("exitCode")
    if code == 0:
        return JobState(status=JobStatus.SUCCEEDED)
    if code == _REPLACED_EXIT:
        return JobState(
            status=JobStatus.FAILED, detail=_REPLACED, exit_code=code, cause=FailureCause.PREEMPTED
        )
    reason = terminated.get("reason") or ""
    text = f"{reason}, exit {code}" if reason not in ("", "Error", "Completed") else f"exit {code}"
    if code == _TIMEOUT_EXIT:
        return JobState(
            status=JobStatus.FAILED,
            detail=f"ran past its timeout, {text}",
            exit_code=code,
            cause=FailureCause.TIMEOUT,
        )
    cause = FailureCause.OOM if reason == "OOMKilled" else FailureCause.EXIT
    return JobState(status=JobStatus.FAILED, detail=text, exit_code=code, cause=cause)


def _host_state(pod: Obj | None, timeout: float, now: datetime | None) -> JobState:
    if pod is None:
        return JobState(status=JobStatus.PENDING, detail="waiting for its pod")
    terminated = _first_run(pod)
    if terminated is not None:
        return _ended(terminated)
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
    ran = recorded_hosts(lws)
    if ran is not None:
        for index, uid in enumerate(ran):
            if (newest.get(index) or {}).get("metadata", {}).get("uid") != uid:
                return JobState(
                    status=JobStatus.FAILED,
                    detail=f"host {index} of {count}: {_REPLACED}",
                    cause=FailureCause.PREEMPTED,
                )
    if not newest and events:
        message = (events[-1].get("message") or "").strip()[:300]
        return JobState(status=JobStatus.PENDING, detail=f"FailedCreate: {message}")
    hosts = [_host_state(newest.get(i), timeout, now) for i in range(count)]
    for index, host in enumerate(hosts):
        if host.status is JobStatus.FAILED:
            detail = f"host {index} of {count}: {host.detail}".rstrip(": ")
            return JobState(
                status=JobStatus.FAILED, detail=detail, exit_code=host.exit_code, cause=host.cause
            )
    if all(host.status is JobStatus.SUCCEEDED for host in hosts):
        return JobState(status=JobStatus.SUCCEEDED)
    waiting = [(i, h) for i, h in enumerate(hosts) if h.status is JobStatus.PENDING]
    if not waiting:
        return JobState(status=JobStatus.RUNNING)
    index, host = waiting[0]
    detail = f"host {index} of {count}: {host.detail}" if host.detail else ""
    return JobState(status=JobStatus.PENDING, detail=detail)
