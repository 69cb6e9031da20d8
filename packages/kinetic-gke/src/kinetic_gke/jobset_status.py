"""Map a JobSet (one job on several hosts, see :mod:`kinetic_gke.jobsets`) and its pods to a
Kinetic ``JobState``.

Every host counts: the job fails as soon as one host's pod fails for good, naming that host
(``host i of N: ...``, which ``JobState.failed_host`` reads), and succeeds once the JobSet
says every Job completed. A host the cluster took away while restarts remain is the group
starting again, said as the attempt it is (``attempt 2 of 4``). Only the pods of the group's
current run count: JobSet labels each with the restart it belongs to.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import msgspec

from kinetic_gke.jobsets import GLOBAL_INDEX, RESTART_ATTEMPT
from kinetic_gke.labels import COMPLETION_INDEX
from kinetic_gke.status import (
    STOPPED_EXIT,
    WAITING_FOR_ADMISSION,
    deadline_state,
    disrupted,
    parse_time,
    pod_state,
    refusal,
    suspended,
)
from kinetic_protocol import FailureCause, JobState, JobStatus
from kinetic_protocol.slices import REPLACED_EXIT, host_failure

__all__ = [
    "attempt_text",
    "host_of",
    "hosts_of",
    "jobset_state",
    "needs_pods",
    "newest_by_host",
    "refusing_jobs",
    "restarts_of",
]

Obj = dict[str, Any]
_MESSAGE_LIMIT = 300


def _condition(obj: Obj, kind: str) -> Obj | None:
    for condition in obj.get("status", {}).get("conditions") or []:
        if condition.get("type") == kind and condition.get("status") == "True":
            return dict(condition)
    return None


def _slice_job(jobset: Obj) -> Obj:
    jobs = jobset.get("spec", {}).get("replicatedJobs") or [{}]
    return dict(jobs[0])


def hosts_per_slice(jobset: Obj) -> int:
    return int(_slice_job(jobset).get("template", {}).get("spec", {}).get("parallelism") or 1)


def hosts_of(jobset: Obj) -> int:
    """How many hosts the group has: slices x hosts per slice."""
    return int(_slice_job(jobset).get("replicas") or 1) * hosts_per_slice(jobset)


def restarts_of(jobset: Obj) -> int:
    """How many times JobSet has run the group again."""
    return int(jobset.get("status", {}).get("restarts") or 0)


def max_restarts(jobset: Obj) -> int:
    return int((jobset.get("spec", {}).get("failurePolicy") or {}).get("maxRestarts") or 0)


def attempt_text(jobset: Obj) -> str:
    """``attempt 2 of 4``: the group's run, of the most it may have."""
    return f"attempt {restarts_of(jobset) + 1} of {max_restarts(jobset) + 1}"


def _meta(pod: Obj, key: str) -> str | None:
    metadata = pod.get("metadata", {})
    value = (metadata.get("labels") or {}).get(key, (metadata.get("annotations") or {}).get(key))
    return None if value is None else str(value)


def host_of(pod: Obj, per_slice: int) -> int:
    """The host a pod runs: its slice (its Job's global index) x ``per_slice`` + its index in
    its Job."""
    return int(_meta(pod, GLOBAL_INDEX) or 0) * per_slice + int(_meta(pod, COMPLETION_INDEX) or 0)


def newest_by_host(jobset: Obj, pods: list[Obj]) -> dict[int, Obj]:
    """Each host's newest pod of the group's current run."""
    run = str(restarts_of(jobset))
    per_slice = hosts_per_slice(jobset)
    newest: dict[int, Obj] = {}
    for pod in sorted(pods, key=lambda p: p["metadata"].get("creationTimestamp") or ""):
        if _meta(pod, RESTART_ATTEMPT) in (None, run):
            newest[host_of(pod, per_slice)] = pod
    return newest


def needs_pods(jobset: Obj) -> bool:
    """Whether the set alone cannot explain the state (a reason lives on its pods)."""
    return _condition(jobset, "Completed") is None


def refusing_jobs(jobset: Obj, pods: list[Obj]) -> list[str]:
    """The set's Jobs (``<set>-<replicated job>-<index>``, as JobSet names them), whose
    ``FailedCreate`` events say why the current run lacks some of its hosts' pods; none
    when every host has one, or the set waits for admission."""
    if suspended(jobset) or len(newest_by_host(jobset, pods)) >= hosts_of(jobset):
        return []
    name = jobset["metadata"]["name"]
    return [
        f"{name}-{replicated.get('name')}-{index}"
        for replicated in jobset.get("spec", {}).get("replicatedJobs") or []
        for index in range(int(replicated.get("replicas") or 1))
    ]


def jobset_state(
    jobset: Obj | None,
    pods: list[Obj],
    *,
    events: list[Obj] | None = None,
    unschedulable_timeout: float,
    now: datetime | None = None,
) -> JobState:
    """The state of one JobSet from it and its pods; ``events``: its Jobs' ``FailedCreate``
    events, read while some host has no pod (:func:`refusing_jobs`)."""
    if jobset is None or jobset.get("metadata", {}).get("deletionTimestamp"):
        return JobState(status=JobStatus.NOT_FOUND)
    when = now or datetime.now(UTC)
    state = _state_now(jobset, pods, events or [], unschedulable_timeout, when)
    restarts = restarts_of(jobset)
    return msgspec.structs.replace(state, preemptions=restarts) if restarts else state


def _state_now(
    jobset: Obj, pods: list[Obj], events: list[Obj], timeout: float, now: datetime
) -> JobState:
    if _condition(jobset, "Completed"):
        return JobState(status=JobStatus.SUCCEEDED)
    hosts = newest_by_host(jobset, pods)
    count = hosts_of(jobset)
    if _condition(jobset, "Failed"):
        return _failed_state(jobset, hosts, count, timeout, now)
    if suspended(jobset):
        return JobState(status=JobStatus.PENDING, detail=WAITING_FOR_ADMISSION)
    failing = _first_failed(hosts)
    if failing is not None:
        host, pod = failing
        failed = _host_failed(host, count, pod_state(pod, timeout, now))
        if _taken_away(pod) and restarts_of(jobset) < max_restarts(jobset):
            again = f"attempt {restarts_of(jobset) + 2} of {max_restarts(jobset) + 1}"
            detail = f"{failed.detail}; Kubernetes runs the group again ({again})"
            return JobState(status=JobStatus.PENDING, detail=detail)
        return failed
    return _running_or_waiting(jobset, hosts, count, events, timeout, now)


def _host_failed(host: int, count: int, state: JobState) -> JobState:
    """The job's state once ``host`` failed as ``state`` says: ``host i of N: <why>, exit
    <code>``, as every backend words a host's failure."""
    code = state.exit_code
    if code is not None and f"exit {code}" not in state.detail:
        detail = f"{state.detail}, exit {code}" if state.detail else f"exit {code}"
        state = msgspec.structs.replace(state, detail=detail)
    return host_failure(host, count, state)


def _finished_at(pod: Obj) -> str:
    for container in pod.get("status", {}).get("containerStatuses") or []:
        terminated = (container.get("state") or {}).get("terminated") or {}
        if terminated.get("finishedAt"):
            return str(terminated["finishedAt"])
    return "~"  # after any time: a pod with no end recorded did not end first


def _stopped(pod: Obj) -> bool:
    """The pod was stopped (SIGTERM) rather than failing on its own: the job controller
    stops a failed Job's other pods."""
    return _exited_with(pod, STOPPED_EXIT)


def _exited_with(pod: Obj, code: int) -> bool:
    return any(
        ((c.get("state") or {}).get("terminated") or {}).get("exitCode") == code
        for c in pod.get("status", {}).get("containerStatuses") or []
    )


def _taken_away(pod: Obj) -> bool:
    """The cluster took the host away, as the set's failure policy reads it (see
    ``jobsets``): disrupted, stopped in a run with no deadline (Kueue suspends a set it
    preempts), or started again in a new pod of its run (Kueue readmitted the set)."""
    no_deadline = pod.get("spec", {}).get("activeDeadlineSeconds") is None
    replaced = _exited_with(pod, REPLACED_EXIT)
    return disrupted(pod) or (no_deadline and _stopped(pod)) or replaced


def _first_failed(hosts: dict[int, Obj]) -> tuple[int, Obj] | None:
    """The host whose failure is the group's: the first to fail on its own (the others were
    stopped with it), else the first to fail."""
    failed = [
        (host, pod) for host, pod in hosts.items() if pod.get("status", {}).get("phase") == "Failed"
    ]
    if not failed:
        return None
    return min(failed, key=lambda item: (_stopped(item[1]), _finished_at(item[1]), item[0]))


def _failed_state(
    jobset: Obj, hosts: dict[int, Obj], count: int, timeout: float, now: datetime
) -> JobState:
    condition = _condition(jobset, "Failed") or {}
    spent = condition.get("reason") == "ReachedMaxRestarts"
    failing = _first_failed(hosts)
    if failing is not None:
        host, pod = failing
        failed = _host_failed(host, count, pod_state(pod, timeout, now))
        if spent:
            detail = (
                f"{failed.detail}; the group was preempted more than its {attempt_text(jobset)}"
            )
            return msgspec.structs.replace(failed, detail=detail, cause=FailureCause.PREEMPTED)
        return failed
    message = (condition.get("message") or "").strip()[:_MESSAGE_LIMIT]
    detail = f"{condition.get('reason', '')}: {message}".strip(": ")
    cause = FailureCause.PREEMPTED if spent else FailureCause.EXIT
    return JobState(status=JobStatus.FAILED, detail=detail, cause=cause)


_FOLLOWER_GATE = "follower pod node selector not set"
"""JobSet's exclusive placement refuses a host's pod until the pod of the slice's first host is
scheduled (its webhook's message); the Job controller makes it again then, so this refusal is
part of the wait, not a reason for it."""


def _running_or_waiting(
    jobset: Obj,
    hosts: dict[int, Obj],
    count: int,
    events: list[Obj],
    timeout: float,
    now: datetime,
) -> JobState:
    """No host has failed: running once every host runs (or finished), else waiting as the
    first host not running says (failing it past the wait, as a single Job's pod would);
    with hosts that have no pod, as the cluster's refusal to create them says, if it does."""
    again = f" ({attempt_text(jobset)})" if restarts_of(jobset) else ""
    phases = [
        hosts[host].get("status", {}).get("phase") if host in hosts else None
        for host in range(count)
    ]
    if all(phase == "Succeeded" for phase in phases):
        return JobState(status=JobStatus.SUCCEEDED)  # ahead of JobSet's own record
    if all(phase in ("Running", "Succeeded") for phase in phases):
        return JobState(status=JobStatus.RUNNING, detail=f"{count} hosts running{again}")
    for host in range(count):
        pod = hosts.get(host)
        if pod is None or pod.get("status", {}).get("phase") in ("Running", "Succeeded"):
            continue
        state = pod_state(pod, timeout, now)
        if state.status is JobStatus.FAILED:
            return _host_failed(host, count, state)
        detail = f"host {host} of {count}: {state.detail or 'starting'}{again}"
        return msgspec.structs.replace(state, detail=detail)
    waiting = f"waiting for the group's {count - len(hosts)} more pods"
    refusals = [e for e in events if _FOLLOWER_GATE not in (e.get("message") or "")]
    refused, since = refusal(refusals) or (waiting, _started(jobset))
    return deadline_state(f"{refused}{again}", since, timeout, now)


def _started(jobset: Obj) -> datetime | None:
    """When the group could start: its last resumption (Kueue's admission), else creation."""
    resumed = [
        condition.get("lastTransitionTime")
        for condition in jobset.get("status", {}).get("conditions") or []
        if condition.get("type") == "Suspended" and condition.get("status") == "False"
    ]
    return parse_time(resumed[0] if resumed else jobset["metadata"].get("creationTimestamp"))
