"""Map a Kubernetes Job and its pods (plain API dicts) to a Kinetic ``JobState``.

The reason is kept: a pod that cannot pull its image, or that stays unschedulable past a
deadline, is FAILED with that reason instead of PENDING forever.
"""

from datetime import UTC, datetime
from typing import Any

from kinetic_protocol import JobState, JobStatus

__all__ = ["IMAGE_PULL_REASONS", "job_state", "needs_pods"]

IMAGE_PULL_REASONS = frozenset({
    "ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull",
    "CreateContainerConfigError", "CreateContainerError",
})  # fmt: skip
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
_MESSAGE_LIMIT = 300
Obj = dict[str, Any]


def _condition(obj: Obj, kind: str) -> Obj | None:
    for condition in obj.get("status", {}).get("conditions") or []:
        if condition.get("type") == kind and condition.get("status") == "True":
            return dict(condition)
    return None


def _parse_time(value: str | None) -> datetime | None:
    if not value:
        return None
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def needs_pods(job: Obj) -> bool:
    """Whether the Job alone cannot explain the state (a reason lives on its pods)."""
    status = job.get("status", {})
    if _condition(job, "Complete") or status.get("succeeded"):
        return False
    return bool(_condition(job, "Failed") or status.get("failed") or not status.get("ready"))


def _newest(pods: list[Obj]) -> Obj | None:
    return max(pods, key=lambda p: p["metadata"].get("creationTimestamp") or "", default=None)


def _terminated_reason(pod: Obj) -> tuple[str, int | None]:
    status = pod.get("status", {})
    disruption = None
    for condition in status.get("conditions") or []:
        if condition.get("type") == "DisruptionTarget" and condition.get("status") == "True":
            disruption = _DISRUPTIONS.get(condition.get("reason", ""), condition.get("reason"))
    if status.get("reason") == "Evicted":
        disruption = f"evicted: {status.get('message', '')}".rstrip(": ")
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


def _waiting_reason(pod: Obj) -> tuple[str, str]:
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
) -> JobState:
    """The state of one Job; ``pods`` may be empty when :func:`needs_pods` said they add
    nothing."""
    if job is None or job.get("metadata", {}).get("deletionTimestamp"):
        return JobState(status=JobStatus.NOT_FOUND)
    status = job.get("status", {})
    if _condition(job, "Complete") or status.get("succeeded"):
        return JobState(status=JobStatus.SUCCEEDED)
    pod = _newest(pods or [])
    if _condition(job, "Failed") or status.get("failed"):
        return _failed_state(job, pod)
    if status.get("ready"):
        return JobState(status=JobStatus.RUNNING)
    if pod is None:
        return JobState(status=JobStatus.PENDING, detail="waiting for the Job's pod")
    return _pod_state(pod, unschedulable_timeout, now or datetime.now(UTC))


def _failed_state(job: Obj, pod: Obj | None) -> JobState:
    if pod is not None:
        detail, code = _terminated_reason(pod)
        return JobState(status=JobStatus.FAILED, detail=detail, exit_code=code)
    failed = _condition(job, "Failed") or _condition(job, "FailureTarget") or {}
    reason = failed.get("reason", "")
    if reason in ("", "BackoffLimitExceeded"):
        # backoffLimit is 0, so the one pod failed; had it ended on its own, it would be here.
        return JobState(status=JobStatus.FAILED, detail=_POD_GONE)
    message = (failed.get("message") or "").strip()[:_MESSAGE_LIMIT]
    return JobState(status=JobStatus.FAILED, detail=f"{reason}: {message}".rstrip(": "))


def _pod_state(pod: Obj, unschedulable_timeout: float, now: datetime) -> JobState:
    """The state of a Job that is neither finished nor ready, read off its newest pod."""
    phase = pod.get("status", {}).get("phase")
    if phase == "Failed":
        detail, code = _terminated_reason(pod)
        return JobState(status=JobStatus.FAILED, detail=detail, exit_code=code)
    reason, message = _waiting_reason(pod)
    if reason in IMAGE_PULL_REASONS:
        return JobState(status=JobStatus.FAILED, detail=f"{reason}: {message}".rstrip(": "))
    if phase == "Running":
        return JobState(status=JobStatus.RUNNING)
    if phase == "Unknown":
        # The node stopped reporting; Kubernetes evicts the pod later and the Job then fails.
        return JobState(status=JobStatus.RUNNING, detail=f"pod state unknown: {_not_ready(pod)}")
    unschedulable = _unschedulable(pod)
    if unschedulable is None:
        return JobState(status=JobStatus.PENDING, detail=reason)
    return _unschedulable_state(unschedulable, unschedulable_timeout, now)


def _not_ready(pod: Obj) -> str:
    for condition in pod.get("status", {}).get("conditions") or []:
        if condition.get("type") == "Ready" and condition.get("status") != "True":
            return str(condition.get("message") or condition.get("reason") or "")
    return "its node stopped reporting"


def _unschedulable_state(condition: Obj, timeout: float, now: datetime) -> JobState:
    """PENDING with the scheduler's message, FAILED once it has said so for ``timeout``."""
    message = condition.get("message", "")
    since = _parse_time(condition.get("lastTransitionTime"))
    waited = (now - since).total_seconds() if since else 0.0
    if waited >= timeout:
        return JobState(
            status=JobStatus.FAILED, detail=f"Unschedulable for {waited:.0f}s: {message}"
        )
    return JobState(status=JobStatus.PENDING, detail=f"Unschedulable: {message}")
