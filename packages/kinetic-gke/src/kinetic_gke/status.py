"""Map a Kubernetes Job and its pods (plain API dicts) to a Kinetic ``JobState``.

The reason is kept: a pod that cannot pull its image, that stays unschedulable past a
deadline, or that the cluster refuses to create (``FailedCreate``), is FAILED with that reason
instead of PENDING forever.

The job controller records an outcome in two writes: first ``SuccessCriteriaMet`` /
``FailureTarget`` with the pod's uid in ``uncountedTerminatedPods``, then ``Complete`` /
``Failed`` with the counts. Both are read as the outcome, so a finished job never reads
PENDING in between.
"""

import signal
from datetime import UTC, datetime
from typing import Any

import msgspec

from kinetic_gke.labels import COMPLETION_INDEX
from kinetic_protocol import FailureCause, JobState, JobStatus

__all__ = [
    "IMAGE_PULL_REASONS",
    "WAITING_FOR_ADMISSION",
    "deadline_state",
    "failed",
    "job_state",
    "needs_pods",
    "parse_time",
    "pod_state",
    "preemptions_of",
    "refusal",
    "disrupted",
    "succeeded",
    "suspended",
    "termination_cause",
    "terminated_reason",
    "waiting_reason",
]

IMAGE_PULL_REASONS = frozenset(
    {
        "ErrImagePull",
        "ImagePullBackOff",
        "InvalidImageName",
        "ErrImageNeverPull",
        "CreateContainerConfigError",
        "CreateContainerError",
    }
)
_DISRUPTIONS = {
    "PreemptionByScheduler": "preempted by the scheduler",
    "TerminationByKubelet": "node shutdown or spot preemption",
    "DeletionByTaintManager": "node lost (tainted)",
    "DeletionByPodGC": "node lost",
    "EvictionByEvictionAPI": "evicted",
}
_POD_GONE = (
    "its pod was deleted before it finished (preempted by the scheduler, or its node was lost)"
)
"""Kinetic deletes pods only with their Job, so a failed Job without a pod lost it this way."""
DEADLINE_EXCEEDED = "DeadlineExceeded"
"""The reason a pod (or Job) past its ``activeDeadlineSeconds`` fails with: Kinetic's
``timeout=``."""
_MESSAGE_LIMIT = 300
Obj = dict[str, Any]


def _condition(obj: Obj, kind: str) -> Obj | None:
    for condition in obj.get("status", {}).get("conditions") or []:
        if condition.get("type") == kind and condition.get("status") == "True":
            return dict(condition)
    return None


def parse_time(value: str | None) -> datetime | None:
    if not value:
        return None
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def succeeded(job: Obj) -> bool:
    """The job controller has recorded success, in its first write or its second."""
    status = job.get("status", {})
    uncounted = status.get("uncountedTerminatedPods") or {}
    return bool(
        _condition(job, "Complete")
        or _condition(job, "SuccessCriteriaMet")
        or status.get("succeeded")
        or uncounted.get("succeeded")
    )


def failed(job: Obj) -> bool:
    """The job controller has recorded failure, in its first write or its second.

    FailureTarget comes alone when the controller fails a Job before counting any pod (past
    its ``activeDeadlineSeconds`` with no pod created); ours come with a pod uid uncounted.
    A Job that runs preempted pods again (a pod failure policy) has failed pods while it goes
    on: only its conditions say it failed."""
    status = job.get("status", {})
    uncounted = status.get("uncountedTerminatedPods") or {}
    if _condition(job, "Failed") or _condition(job, "FailureTarget"):
        return True
    if job.get("spec", {}).get("podFailurePolicy"):
        return False
    return bool(status.get("failed") or uncounted.get("failed"))


def needs_pods(job: Obj) -> bool:
    """Whether the Job alone cannot explain the state (a reason lives on its pods)."""
    if succeeded(job):
        return False
    return failed(job) or not job.get("status", {}).get("ready")


def _newest(pods: list[Obj]) -> Obj | None:
    return max(pods, key=lambda p: p["metadata"].get("creationTimestamp") or "", default=None)


def terminated_reason(pod: Obj) -> tuple[str, int | None]:
    status = pod.get("status", {})
    disruption = None
    for condition in status.get("conditions") or []:
        if condition.get("type") == "DisruptionTarget" and condition.get("status") == "True":
            disruption = _DISRUPTIONS.get(condition.get("reason", ""), condition.get("reason"))
    if status.get("reason") == "Evicted":
        disruption = f"evicted: {status.get('message', '')}".rstrip(": ")
    if status.get("reason") == DEADLINE_EXCEEDED:  # not a disruption, but said the same way
        disruption = f"{DEADLINE_EXCEEDED}: {status.get('message', '')}".rstrip(": ")
    for container in status.get("containerStatuses") or []:
        terminated = (container.get("state") or {}).get("terminated")
        if terminated:
            code = terminated.get("exitCode")
            reason = terminated.get("reason") or ""
            text = reason if reason not in ("", "Error", "Completed") else ""
            message = (terminated.get("message") or "").strip()[:_MESSAGE_LIMIT]
            if text and message and reason != "OOMKilled":
                text = f"{text}: {message}"  # e.g. StartError: exec: "python": not found
            if disruption:
                text = f"{disruption}; {text}".rstrip("; ")
            return text, code
    return disruption or status.get("reason") or "", None


def termination_cause(pod: Obj) -> FailureCause:
    """Why a failed pod's container ended, as a cause: out of memory, past its deadline,
    disrupted (preempted, evicted, node lost), or its process exited on its own."""
    status = pod.get("status", {})
    for container in status.get("containerStatuses") or []:
        terminated = (container.get("state") or {}).get("terminated") or {}
        if terminated.get("reason") == "OOMKilled":
            return FailureCause.OOM
    if status.get("reason") == DEADLINE_EXCEEDED:
        return FailureCause.TIMEOUT
    if status.get("reason") == "Evicted" or _disrupted(pod):
        return FailureCause.PREEMPTED
    return FailureCause.EXIT


def waiting_reason(pod: Obj) -> tuple[str, str]:
    for container in pod.get("status", {}).get("containerStatuses") or []:
        waiting = (container.get("state") or {}).get("waiting")
        if waiting:
            return waiting.get("reason") or "", waiting.get("message") or ""
    return "", ""


def _unschedulable(pod: Obj) -> Obj | None:
    for condition in pod.get("status", {}).get("conditions") or []:
        if (
            condition.get("type") == "PodScheduled"
            and condition.get("status") == "False"
            and condition.get("reason") == "Unschedulable"
        ):
            return dict(condition)
    return None


def job_state(
    job: Obj | None,
    pods: list[Obj] | None,
    *,
    unschedulable_timeout: float,
    now: datetime | None = None,
    events: list[Obj] | None = None,
) -> JobState:
    """The state of one Job; ``pods`` may be empty when :func:`needs_pods` said they add
    nothing. ``events`` are the Job's ``FailedCreate`` events, read when it has no pod."""
    if job is None or job.get("metadata", {}).get("deletionTimestamp"):
        return JobState(status=JobStatus.NOT_FOUND)
    state = _state_now(job, pods or [], unschedulable_timeout, now, events or [])
    preemptions = preemptions_of(job)
    if preemptions:
        return msgspec.structs.replace(state, preemptions=preemptions)
    return state


def _state_now(
    job: Obj, pods: list[Obj], unschedulable_timeout: float, now: datetime | None, events: list[Obj]
) -> JobState:
    if succeeded(job):
        return JobState(status=JobStatus.SUCCEEDED)
    pod = _newest(pods)
    if failed(job):
        return _failed_state(job, pod)
    running_or_held = _running_or_held(job)
    if running_or_held is not None:
        return running_or_held
    now = now or datetime.now(UTC)
    if pod is None:
        return _no_pod_state(job, events, unschedulable_timeout, now)
    if _runs_again(job, pod, pods):
        detail, _ = terminated_reason(pod)
        return JobState(
            status=JobStatus.PENDING, detail=f"{detail}; Kubernetes runs it again in a new pod"
        )
    return pod_state(pod, unschedulable_timeout, now)


WAITING_FOR_ADMISSION = "waiting to be admitted by its queue"
ADMISSION_GATE = "kueue.x-k8s.io/admission"
"""The scheduling gate Kueue puts on the pods of a workload it manages pod by pod (a
LeaderWorkerSet's) until it admits the workload."""


def _running_or_held(job: Obj) -> JobState | None:
    if job.get("status", {}).get("ready"):
        return JobState(status=JobStatus.RUNNING)
    if suspended(job):
        # Kueue holds it: waiting in a queue is not a failure, whatever the deadline.
        return JobState(status=JobStatus.PENDING, detail=WAITING_FOR_ADMISSION)
    return None


def suspended(obj: Obj) -> bool:
    """The workload is suspended: a queue (Kueue) has not admitted it yet, or took it back."""
    return bool(obj.get("spec", {}).get("suspend"))


def preemptions_of(job: Obj) -> int:
    """How many pods of the Job were preempted and replaced by a new one: every failure the
    Job counts while it has not failed is a disruption (any other fails the Job at once; see
    ``manifests.pod_failure_policy``); the one that failed the Job was not replaced."""
    status = job.get("status", {})
    counted = int(status.get("failed") or 0)
    counted += len((status.get("uncountedTerminatedPods") or {}).get("failed") or [])
    if failed(job) and counted:
        counted -= 1
    return counted if job.get("spec", {}).get("podFailurePolicy") else 0


def disrupted(pod: Obj) -> bool:
    """The pod failed because the cluster took it away (preempted, evicted, node lost)."""
    return _disrupted(pod)


def _disrupted(pod: Obj) -> bool:
    status = pod.get("status", {})
    return status.get("phase") == "Failed" and (
        any(
            condition.get("type") == "DisruptionTarget" and condition.get("status") == "True"
            for condition in status.get("conditions") or []
        )
        or _stopped_without_deadline(pod)
    )


STOPPED_EXIT = 128 + signal.SIGTERM
"""How a run told to stop ends (the runtime's own exit after SIGTERM)."""


def _stopped_without_deadline(pod: Obj) -> bool:
    """A single Job's pod with no deadline that ended as stopped (SIGTERM): taken away, as its
    Job's pod failure policy says (``manifests.pod_failure_policy``: a Kueue preemption deletes
    the pod with no ``DisruptionTarget``). Not an array's: deleting one index's pod is how
    that input is cancelled, for good."""
    metadata = pod.get("metadata", {})
    owners = metadata.get("ownerReferences") or []
    if not any(owner.get("kind") == "Job" for owner in owners):
        return False
    if COMPLETION_INDEX in (metadata.get("labels") or {}) or COMPLETION_INDEX in (
        metadata.get("annotations") or {}
    ):
        return False
    if pod.get("spec", {}).get("activeDeadlineSeconds") is not None:
        return False
    return any(
        ((container.get("state") or {}).get("terminated") or {}).get("exitCode") == STOPPED_EXIT
        for container in pod.get("status", {}).get("containerStatuses") or []
        if container.get("name") == "kinetic"
    )


def _runs_again(job: Obj, pod: Obj, pods: list[Obj]) -> bool:
    """The newest pod was taken away by the cluster, and the Job's pod failure policy has it
    start a new one: the budget (``backoffLimit``) is not spent yet. Read as the Job's own
    next attempt coming, not as a failure (the Job says so itself once the budget is spent)."""
    if not job.get("spec", {}).get("podFailurePolicy") or not _disrupted(pod):
        return False
    limit = int(job.get("spec", {}).get("backoffLimit") or 0)
    return sum(1 for other in pods if _disrupted(other)) <= limit


def _no_pod_state(job: Obj, events: list[Obj], timeout: float, now: datetime) -> JobState:
    """No pod yet: the cluster may be refusing to create it, which only its events say. The
    wait counts from when the Job started (its admission, where a queue admits it)."""
    status, metadata = job.get("status", {}), job.get("metadata", {})
    started = parse_time(status.get("startTime") or metadata.get("creationTimestamp"))
    detail, since = refusal(events) or ("waiting for the Job's pod", started)
    return deadline_state(detail, since, timeout, now)


def refusal(events: list[Obj]) -> tuple[str, datetime | None] | None:
    """What the newest of a workload's ``FailedCreate`` events says (``FailedCreate: ...``),
    and when the refusals began; None without any."""
    newest = max(events, key=_event_time, default=None)
    if newest is None:
        return None
    message = (newest.get("message") or "").strip()[:_MESSAGE_LIMIT]
    times = [t for t in (_event_first_time(event) for event in events) if t is not None]
    return f"FailedCreate: {message}", min(times, default=None)


def _event_time(event: Obj) -> str:
    return str(event.get("lastTimestamp") or event.get("eventTime") or "")


def _event_first_time(event: Obj) -> datetime | None:
    return parse_time(event.get("firstTimestamp") or event.get("eventTime"))


def deadline_state(detail: str, since: datetime | None, timeout: float, now: datetime) -> JobState:
    """PENDING with ``detail`` while it lasts less than ``timeout``, FAILED after."""
    waited = (now - since).total_seconds() if since else 0.0
    if waited >= timeout:
        return JobState(
            status=JobStatus.FAILED,
            detail=f"{detail} (for {waited:.0f}s)",
            cause=FailureCause.UNSCHEDULABLE,
        )
    return JobState(status=JobStatus.PENDING, detail=detail)


def _failed_state(job: Obj, pod: Obj | None) -> JobState:
    condition = _condition(job, "Failed") or _condition(job, "FailureTarget") or {}
    reason = condition.get("reason", "")
    if pod is not None:
        detail, code = terminated_reason(pod)
        cause = termination_cause(pod)
        if reason == DEADLINE_EXCEEDED:  # a Job-level deadline: its pods are being deleted
            cause = FailureCause.TIMEOUT
        return JobState(status=JobStatus.FAILED, detail=detail, exit_code=code, cause=cause)
    if reason in ("", "BackoffLimitExceeded"):
        # Only disruptions count against backoffLimit (any other failure fails the Job by its
        # pod failure policy), and a pod that ended on its own would still be here.
        return JobState(status=JobStatus.FAILED, detail=_POD_GONE, cause=FailureCause.PREEMPTED)
    message = (condition.get("message") or "").strip()[:_MESSAGE_LIMIT]
    cause = FailureCause.TIMEOUT if reason == DEADLINE_EXCEEDED else FailureCause.EXIT
    return JobState(
        status=JobStatus.FAILED, detail=f"{reason}: {message}".rstrip(": "), cause=cause
    )


def pod_state(pod: Obj, unschedulable_timeout: float, now: datetime) -> JobState:
    """The state of a Job that is neither finished nor ready, read off its newest pod."""
    phase = pod.get("status", {}).get("phase")
    if phase == "Failed":
        detail, code = terminated_reason(pod)
        cause = termination_cause(pod)
        return JobState(status=JobStatus.FAILED, detail=detail, exit_code=code, cause=cause)
    reason, message = waiting_reason(pod)
    if reason in IMAGE_PULL_REASONS:
        return JobState(
            status=JobStatus.FAILED,
            detail=f"{reason}: {message}".rstrip(": "),
            cause=FailureCause.IMAGE,
        )
    if phase == "Running":
        return JobState(status=JobStatus.RUNNING)
    if phase == "Succeeded":
        # Ahead of the job controller's own record; the result is already stored.
        return JobState(status=JobStatus.SUCCEEDED)
    if phase == "Unknown":
        # The node stopped reporting; Kubernetes evicts the pod later and the Job then fails.
        return JobState(status=JobStatus.RUNNING, detail=f"pod state unknown: {_not_ready(pod)}")
    return _pending_state(pod, reason, unschedulable_timeout, now)


def _pending_state(pod: Obj, reason: str, unschedulable_timeout: float, now: datetime) -> JobState:
    """A pod not running yet: unschedulable, waiting on its node, or placed by no one."""
    unschedulable = _unschedulable(pod)
    if unschedulable is not None:
        return _unschedulable_state(unschedulable, unschedulable_timeout, now)
    if _scheduled(pod):
        return JobState(status=JobStatus.PENDING, detail=reason)
    # Not placed, and no scheduler has said why (none running, or scheduling gates).
    gates = [gate.get("name", "") for gate in pod.get("spec", {}).get("schedulingGates") or []]
    if ADMISSION_GATE in gates:  # Kueue holds a slice's pods until it admits the slice
        return JobState(status=JobStatus.PENDING, detail=WAITING_FOR_ADMISSION)
    detail = f"scheduling gated by {', '.join(gates)}" if gates else "not scheduled yet"
    since = parse_time(pod.get("metadata", {}).get("creationTimestamp"))
    return deadline_state(detail, since, unschedulable_timeout, now)


def _scheduled(pod: Obj) -> bool:
    """Placed on a node, or a scheduler has spoken; container states come from a kubelet."""
    if pod.get("spec", {}).get("nodeName") or pod.get("status", {}).get("containerStatuses"):
        return True
    return any(
        c.get("type") == "PodScheduled" for c in pod.get("status", {}).get("conditions") or []
    )


def _not_ready(pod: Obj) -> str:
    for condition in pod.get("status", {}).get("conditions") or []:
        if condition.get("type") == "Ready" and condition.get("status") != "True":
            return str(condition.get("message") or condition.get("reason") or "")
    return "its node stopped reporting"


def _unschedulable_state(condition: Obj, timeout: float, now: datetime) -> JobState:
    """PENDING with the scheduler's message, FAILED once it has said so for ``timeout``."""
    message = condition.get("message", "")
    since = parse_time(condition.get("lastTransitionTime"))
    waited = (now - since).total_seconds() if since else 0.0
    if waited >= timeout:
        return JobState(
            status=JobStatus.FAILED,
            detail=f"Unschedulable for {waited:.0f}s: {message}",
            cause=FailureCause.UNSCHEDULABLE,
        )
    return JobState(status=JobStatus.PENDING, detail=f"Unschedulable: {message}")
