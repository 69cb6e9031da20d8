"""Each index of an array Job (:mod:`kinetic_gke.arrays`) read as a Kinetic job's state.

An index's outcome is the Job's to record (its completed and failed index sets): a completed
index needs no pod to read as succeeded. The rest is read off the Job's pods that have not
succeeded (:mod:`kinetic_gke.array_polls` says which a poll lists): which attempt each pod runs
(the failure count the job controller writes on it), whether it runs, waits to be scheduled or
was preempted, and why a run failed. An index with no pod is waiting for its turn
(``parallelism``), for the job controller, or for a cluster that refuses to create its pod;
only the last is read from the Job's ``FailedCreate`` events, and fails it after
``KINETIC_UNSCHEDULABLE_TIMEOUT`` as an unschedulable pod does.
"""

import functools
from collections import defaultdict
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from datetime import UTC, datetime

import msgspec

from kinetic_gke import status
from kinetic_gke.arrays import (
    FAILURE_COUNT,
    INDEX_LABEL,
    INDEX_OFFSET,
    JOB_ID_PREFIX,
    JOB_NAME_LABEL,
)
from kinetic_gke.k8s.connection import Obj
from kinetic_protocol import EXIT_PREEMPTIONS_SPENT, FailureCause, JobState, JobStatus
from kinetic_protocol.layout import ascii_count

__all__ = [
    "attempt_states",
    "format_indexes",
    "index_job_ids",
    "index_settled",
    "parse_indexes",
    "pod_attempt",
    "pods_by_job",
]


def parse_indexes(text: str | None) -> set[int]:
    """The indexes of a Job status interval list, ``"0-3,7"``."""
    found: set[int] = set()
    for part in (text or "").split(","):
        if not part:
            continue
        low, _, high = part.partition("-")
        found.update(range(int(low), int(high or low) + 1))
    return found


def format_indexes(indexes: Iterable[int]) -> str:
    """``indexes`` as a Job status interval list (``{0, 1, 2, 3, 7}``: ``"0-3,7"``)."""
    parts: list[str] = []
    ordered = sorted(set(indexes))
    start = 0
    for position, index in enumerate(ordered):
        if position + 1 < len(ordered) and ordered[position + 1] == index + 1:
            continue
        low = ordered[start]
        parts.append(str(low) if low == index else f"{low}-{index}")
        start = position + 1
    return ",".join(parts)


def pod_index(pod: Obj) -> int | None:
    value = (pod.get("metadata", {}).get("labels") or {}).get(INDEX_LABEL)
    if value is None:
        value = (pod.get("metadata", {}).get("annotations") or {}).get(INDEX_LABEL)
    return ascii_count(value) if isinstance(value, str) else None


def pods_by_job(pods: Iterable[Obj]) -> dict[str, list[Obj]]:
    """Pods by the name of the Job that made them (a split batch's Jobs share its labels)."""
    found: dict[str, list[Obj]] = defaultdict(list)
    for pod in pods:
        found[(pod["metadata"].get("labels") or {}).get(JOB_NAME_LABEL, "")].append(pod)
    return found


def pods_by_index(pods: Iterable[Obj]) -> dict[int, list[Obj]]:
    found: dict[int, list[Obj]] = defaultdict(list)
    for pod in pods:
        index = pod_index(pod)
        if index is not None:
            found[index].append(pod)
    return found


def _newest(pods: Sequence[Obj]) -> Obj | None:
    return max(pods, key=lambda p: p["metadata"].get("creationTimestamp") or "", default=None)


def _job_failure(job: Obj) -> str | None:
    """Why the whole Job failed (fail-fast), or None while it has not."""
    for condition in job.get("status", {}).get("conditions") or []:
        if condition.get("type") in ("Failed", "FailureTarget") and condition.get("status") == (
            "True"
        ):
            reason = condition.get("reason") or "failed"
            return f"{reason}: {condition.get('message') or ''}".rstrip(": ")
    return None


def pod_attempt(pod: Obj) -> int:
    """The attempt a pod of an array Job runs: its index's counted failures before it."""
    value = (pod.get("metadata", {}).get("annotations") or {}).get(FAILURE_COUNT, "0")
    count = ascii_count(value) if isinstance(value, str) else None
    return 0 if count is None else count


def _terminations(pod: Obj) -> Iterator[Obj]:
    """The ``terminated`` state of each container of ``pod`` that has one."""
    for container in pod.get("status", {}).get("containerStatuses") or []:
        terminated = (container.get("state") or {}).get("terminated")
        if terminated:
            yield terminated


def _exit_code(pod: Obj) -> int | None:
    codes = (t.get("exitCode") for t in _terminations(pod))
    return next((code for code in codes if isinstance(code, int)), None)


def _ended(pod: Obj, phase: str) -> JobState:
    detail, code = status.terminated_reason(pod)
    if phase == "Succeeded":
        return JobState(status=JobStatus.SUCCEEDED)
    if _exit_code(pod) == EXIT_PREEMPTIONS_SPENT:
        return JobState(
            status=JobStatus.FAILED,
            exit_code=EXIT_PREEMPTIONS_SPENT,
            cause=FailureCause.PREEMPTED,
            detail="preempted more often than its preemption_retries allow",
        )
    return JobState(
        status=JobStatus.FAILED, detail=detail, exit_code=code, cause=status.termination_cause(pod)
    )


def _index_state(
    index: int,
    newest: Obj | None,
    done: tuple[set[int], set[int], str | None],
    podless: Callable[[], JobState],
    unschedulable_timeout: float,
    now: datetime,
) -> JobState:
    _, failed, job_failure = done
    if index in failed:
        if newest is None:
            # The Job keeps its outcome, but its pods go with a cleanup of this child (or
            # before a poll read why it failed: the cluster's garbage collection).
            return JobState(status=JobStatus.NOT_FOUND, detail="its pod was deleted")
        return _ended(newest, "Failed")
    phase = (newest or {}).get("status", {}).get("phase")
    if job_failure is not None:
        if newest is not None and phase == "Succeeded":
            return JobState(status=JobStatus.SUCCEEDED)
        return JobState(
            status=JobStatus.FAILED,
            cause=FailureCause.CANCELLED,
            detail=f"the batch's Job stopped every index ({job_failure})",
        )
    if newest is None:
        return podless()
    return _unfinished_state(newest, unschedulable_timeout, now)


def _unfinished_state(newest: Obj, unschedulable_timeout: float, now: datetime) -> JobState:
    """An index the Job has not settled and has a pod for: running, waiting to, or about to
    run again."""
    if newest.get("status", {}).get("phase") == "Failed":
        # Neither completed nor failed: the job controller runs this index again.
        detail, _ = status.terminated_reason(newest)
        return JobState(
            status=JobStatus.PENDING,
            detail=f"{detail}; Kubernetes runs it again in a new pod".lstrip("; "),
        )
    return status.pod_state(newest, unschedulable_timeout, now)


def _followed(newest: Obj | None, latest: int) -> JobState:
    """An attempt the Job has run again as attempt ``latest``: it failed."""
    if newest is not None and newest.get("status", {}).get("phase") == "Failed":
        ended = _ended(newest, "Failed")
    else:
        ended = JobState(status=JobStatus.FAILED, detail="its pod failed")
    return msgspec.structs.replace(ended, next_attempt=latest)


class _IndexPods:
    """One Job's pods grouped once: by ``(index, attempt)``, each index's latest attempt and
    the first attempt its pods leave possible for it (a counted failure's next); how many have
    yet to end, and when the newest was made or ended (``changed_at`` at the latest: a change
    seen without its pod)."""

    def __init__(self, pods: Iterable[Obj], changed_at: str = "") -> None:
        self.by_attempt: dict[tuple[int, int], list[Obj]] = defaultdict(list)
        self.latest: dict[int, int] = {}
        self.earliest_open: dict[int, int] = {}
        self.active = 0
        self.changed_at = changed_at
        for pod in pods:
            index = pod_index(pod)
            if index is None:
                continue
            attempt = pod_attempt(pod)
            self.by_attempt[index, attempt].append(pod)
            if attempt > self.latest.get(index, -1):
                self.latest[index] = attempt
            phase = pod.get("status", {}).get("phase")
            counted = phase == "Failed" and not status.disrupted(pod)
            possible = attempt + 1 if counted else attempt
            if possible > self.earliest_open.get(index, -1):
                self.earliest_open[index] = possible
            if phase not in ("Succeeded", "Failed"):
                self.active += 1

    def last_change(self) -> str:
        """When the newest pod was made or ended; read only for a refused index."""
        changes = (_last_change(pod) for pods in self.by_attempt.values() for pod in pods)
        return max(changes, default=self.changed_at)


def _last_change(pod: Obj) -> str:
    """When ``pod`` was made or, if it has, ended (RFC 3339 text, which sorts as time)."""
    made = pod.get("metadata", {}).get("creationTimestamp") or ""
    return max([made, *(t.get("finishedAt") or "" for t in _terminations(pod))])


def _about(event: Obj, job: Obj) -> bool:
    """Whether ``event`` is about ``job``, not an earlier Job of the same name."""
    subject, metadata = event.get("involvedObject") or {}, job.get("metadata", {})
    uid = metadata.get("uid")
    return subject.get("name") == metadata.get("name") and uid in (None, subject.get("uid"))


def _podless_state(
    job: Obj,
    grouped: _IndexPods,
    refusals: Callable[[], list[Obj]],
    timeout: float,
    now: datetime,
) -> JobState:
    """An index the Job has no pod for yet: its turn has not come (``parallelism``), the job
    controller is about to make one, or the cluster refuses to (``FailedCreate``: quota,
    admission, a missing service account). A refusal counts towards the deadline only while
    no pod of the Job is still to end, and from the last time one was made or ended: until
    then the Job is moving, and a pod of its own that ends frees what a quota lacks."""
    if status.suspended(job):  # its queue has not admitted it (or took it back)
        return JobState(status=JobStatus.PENDING, detail=status.WAITING_FOR_ADMISSION)
    turns = job.get("spec", {}).get("parallelism")
    if isinstance(turns, int) and grouped.active >= turns:
        return JobState(
            status=JobStatus.PENDING,
            detail=f"waiting for its turn: this Job runs {turns} inputs at a time",
        )
    refused = status.refusal([event for event in refusals() if _about(event, job)])
    if refused is None:
        return JobState(status=JobStatus.PENDING, detail="waiting for its pod")
    detail, first = refused
    if grouped.active:
        return JobState(
            status=JobStatus.PENDING,
            detail=f"{detail} (the Job tries again as its running inputs end)",
        )
    since = [t for t in (first, status.parse_time(grouped.last_change())) if t is not None]
    return status.deadline_state(detail, max(since, default=None), timeout, now)


def attempt_states(
    job: Obj | None,
    pods: Iterable[Obj],
    attempts: Iterable[tuple[int, int]],
    *,
    unschedulable_timeout: float,
    now: datetime | None = None,
    refusals: Callable[[], list[Obj]] = list,
    cleaned: Collection[int] = (),
    changed_at: str = "",
) -> dict[tuple[int, int], JobState]:
    """The state of each ``(index, attempt)`` of the array Job ``job`` (None: it is gone),
    from the Job's completed and failed index sets and its ``pods``: every pod that has not
    succeeded (a succeeded one may be among them; a completed index reads as succeeded
    without it). An attempt whose index has a later attempt's pod failed, and names it
    (``next_attempt``). ``refusals`` gives the ``FailedCreate`` events of the Job (or of
    more), called only when an index the Job has not settled has no pod and the Job could run
    it now. ``cleaned``: settled indexes whose pods were deleted (a cleanup of that child),
    read as gone; ``changed_at``: when the Job last changed, if later than any pod says."""
    wanted = list(attempts)
    if job is None or job.get("metadata", {}).get("deletionTimestamp"):
        return dict.fromkeys(wanted, JobState(status=JobStatus.NOT_FOUND))
    job_status = job.get("status", {})
    done = (
        parse_indexes(job_status.get("completedIndexes")),
        parse_indexes(job_status.get("failedIndexes")),
        _job_failure(job),
    )
    grouped = _IndexPods(pods, changed_at)
    moment = now or datetime.now(UTC)

    @functools.cache
    def podless() -> JobState:
        return _podless_state(job, grouped, refusals, unschedulable_timeout, moment)

    found: dict[tuple[int, int], JobState] = {}
    for index, attempt in wanted:
        own = grouped.by_attempt.get((index, attempt), [])
        newest = own[0] if len(own) == 1 else _newest(own)
        latest = grouped.latest.get(index, 0)
        if index in cleaned and (index in done[0] or index in done[1]):
            state = JobState(status=JobStatus.NOT_FOUND, detail="its pod was deleted")
        elif index in done[0]:
            found[index, attempt] = _completed(attempt, grouped.earliest_open.get(index, 0), own)
            continue
        elif latest > attempt:
            state = _followed(newest, latest)
        else:
            state = _index_state(index, newest, done, podless, unschedulable_timeout, moment)
        found[index, attempt] = _with_preemptions(state, own, newest) if len(own) > 1 else state
    return found


def _completed(attempt: int, earliest: int, own: list[Obj]) -> JobState:
    """An attempt of an index the Job completed: failed, if a counted failure of the index
    came at or after it (the success is a later attempt, ``earliest`` at least); else the
    success, whose pod need not be at hand (the attempt asked about is one a run recorded)."""
    if attempt < earliest:
        newest = _newest(own)
        return _with_preemptions(_followed(newest, earliest), own, newest)
    preempted = sum(1 for pod in own if status.disrupted(pod))
    return JobState(status=JobStatus.SUCCEEDED, preemptions=preempted)


def _with_preemptions(state: JobState, pods: list[Obj], newest: Obj | None) -> JobState:
    """How many runs of the attempt the cluster took away and the Job ran again (not a run
    that only found the attempt's preemptions spent)."""
    preempted = sum(1 for pod in pods if pod is not newest and status.disrupted(pod))
    if newest is not None and _exit_code(newest) == EXIT_PREEMPTIONS_SPENT:
        preempted -= 1  # the last preemption was not run again: it ended the index
    return msgspec.structs.replace(state, preemptions=preempted) if preempted > 0 else state


def index_job_ids(job: Obj, pods: Iterable[Obj]) -> list[str]:
    """The job ids of an array Job's attempts that still have a pod (an index cleaned up, or
    not started yet, has none), given pods of any Jobs; none for any other Job."""
    annotations = job.get("metadata", {}).get("annotations") or {}
    prefix = annotations.get(JOB_ID_PREFIX)
    if not prefix or job.get("spec", {}).get("completionMode") != "Indexed":
        return []
    offset = int(annotations.get(INDEX_OFFSET) or 0)
    name = job["metadata"].get("name")
    own = [p for p in pods if (p["metadata"].get("labels") or {}).get(JOB_NAME_LABEL) == name]
    attempts = {
        (offset + index, pod_attempt(pod))
        for index, pods_of in pods_by_index(own).items()
        for pod in pods_of
    }
    return [
        f"{prefix}-{index}" + (f"-r{attempt}" if attempt else "")
        for index, attempt in sorted(attempts)
    ]


def index_settled(job: Obj, index: int) -> bool:
    """Whether the Job has recorded the outcome of ``index`` (or stopped every index): its
    pods may go without the index being read as waiting for one."""
    job_status = job.get("status", {})
    done = parse_indexes(job_status.get("completedIndexes")) | parse_indexes(
        job_status.get("failedIndexes")
    )
    return index in done or _job_failure(job) is not None
