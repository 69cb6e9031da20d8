"""How a multi-host slice's Kubernetes objects say its job ended, read one way for every reader.

Two readers judge a slice: the pathways backend, from a client's poll, and the slice itself,
whose hosts stop it once the outcome is known (``kinetic_runtime.release``) with no client
alive. Both must record the same outcome on the LeaderWorkerSet, so the names they write and
the reading of a host's run live here, beside :class:`~kinetic_protocol.JobState`. Objects are
plain API dicts; nothing here talks to a cluster.

A host's run is its container's first run: ``state.terminated``, or ``lastState.terminated``
once Kubernetes restarted the container (a LeaderWorkerSet's pods always restart, and the
restarted runtime only waits).
"""

from typing import Any

from kinetic_protocol.causes import FailureCause
from kinetic_protocol.status import JobState, JobStatus

__all__ = [
    "FINAL_CAUSE",
    "FINAL_DETAIL",
    "FINAL_EXIT_CODE",
    "FINAL_STATE",
    "HOST_PODS",
    "LOG_TAIL_BYTES",
    "LOG_TAIL_LINES",
    "REPLACED",
    "REPLACED_EXIT",
    "TIMEOUT_EXIT",
    "WORKER_INDEX",
    "final_annotations",
    "first_run",
    "host_failure",
    "host_of",
    "log_tail_key",
    "newest_by_host",
    "recorded_state",
    "replaced_host",
    "run_state",
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
REPLACED_EXIT = 3
"""The runtime's exit status when it finds its host was started before in another pod."""
TIMEOUT_EXIT = 4
"""The runtime's exit status when it ended its run at the attempt's timeout."""
REPLACED = "its pod was replaced after the host had started (evicted, preempted or node lost)"
_REPLACED_STATE = JobState(status=JobStatus.FAILED, detail=REPLACED, cause=FailureCause.PREEMPTED)
_CAUSES = frozenset(cause.value for cause in FailureCause)
"""Causes this Kinetic knows; one recorded by a newer Kinetic reads as none."""


def log_tail_key(host: int) -> str:
    return f"kinetic.dev/log-tail-{host}"


def host_of(pod: Obj) -> int:
    """The host index of one of the slice's pods (0 for the leader)."""
    return int((pod["metadata"].get("labels") or {}).get(WORKER_INDEX, "0") or 0)


def newest_by_host(pods: list[Obj]) -> dict[int, Obj]:
    """Each host's newest pod, by host index."""
    newest: dict[int, Obj] = {}
    for pod in sorted(pods, key=lambda p: p["metadata"].get("creationTimestamp") or ""):
        newest[host_of(pod)] = pod
    return newest


def first_run(pod: Obj | None) -> Obj | None:
    """How the pod's container's first run ended (its ``terminated`` state), if it has."""
    for container in ((pod or {}).get("status") or {}).get("containerStatuses") or []:
        for state in (container.get("lastState") or {}, container.get("state") or {}):
            if "terminated" in state:
                terminated: Obj = state["terminated"]
                return terminated
    return None


def run_state(terminated: Obj) -> JobState:
    """A host's outcome from how its first run ended."""
    code = terminated.get("exitCode")
    if code == 0:
        return JobState(status=JobStatus.SUCCEEDED)
    if code == REPLACED_EXIT:
        return JobState(
            status=JobStatus.FAILED, detail=REPLACED, exit_code=code, cause=FailureCause.PREEMPTED
        )
    reason = terminated.get("reason") or ""
    text = f"{reason}, exit {code}" if reason not in ("", "Error", "Completed") else f"exit {code}"
    if code == TIMEOUT_EXIT:
        return JobState(
            status=JobStatus.FAILED,
            detail=f"ran past its timeout, {text}",
            exit_code=code,
            cause=FailureCause.TIMEOUT,
        )
    cause = FailureCause.OOM if reason == "OOMKilled" else FailureCause.EXIT
    return JobState(status=JobStatus.FAILED, detail=text, exit_code=code, cause=cause)


def host_failure(index: int, count: int, failed: JobState) -> JobState:
    """The job's state once host ``index`` of ``count`` failed as ``failed`` says."""
    detail = f"host {index} of {count}: {failed.detail}".rstrip(": ")
    return JobState(
        status=JobStatus.FAILED, detail=detail, exit_code=failed.exit_code, cause=failed.cause
    )


def replaced_host(lws: Obj, newest: dict[int, Obj], count: int) -> JobState | None:
    """The job's failure if a host's newest pod is not the one recorded in
    :data:`HOST_PODS` (Kubernetes started the host again in a new pod: evicted, preempted,
    its node lost), the first such host named; None if every host runs where it started."""
    recorded = ((lws.get("metadata") or {}).get("annotations") or {}).get(HOST_PODS)
    for index, uid in enumerate(str(recorded).split(",") if recorded else []):
        if ((newest.get(index) or {}).get("metadata") or {}).get("uid") != uid:
            return host_failure(index, count, _REPLACED_STATE)
    return None


def final_annotations(state: JobState) -> dict[str, str]:
    """The annotations that record a stopped slice's outcome (read by :func:`recorded_state`)."""
    return {
        FINAL_STATE: state.status.value,
        FINAL_DETAIL: state.detail[:1000],
        FINAL_EXIT_CODE: "" if state.exit_code is None else str(state.exit_code),
        FINAL_CAUSE: "" if state.cause is None else state.cause.value,
    }


def recorded_state(lws: Obj) -> JobState | None:
    """The outcome recorded on a slice that was stopped, if any."""
    annotations = (lws.get("metadata") or {}).get("annotations") or {}
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
