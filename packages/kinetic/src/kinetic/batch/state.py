"""The state a batch's handle and its submitter share, and the one rule for when a child is done.

A child is *settled* when its latest attempt is terminal and no further attempt will follow.
Both the submitting thread and the handle's own polling decide this with :meth:`decide`, so
they never disagree about a retry.
"""

import enum
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from kinetic.batch.children import ChildJobs
from kinetic.bookkeeping.kept import CLEANED_UP, batch_cancelled, is_cleaned_up
from kinetic.failure import cause_of
from kinetic.handle import JobHandle
from kinetic_protocol import (
    FailureCause,
    IntegrityError,
    JobRecord,
    JobState,
    JobStatus,
    ObjectNotFoundError,
    RetryRule,
    Succeeded,
)

__all__ = ["BatchState", "Decision", "child_state", "effective_state", "retry_cause"]


class Decision(enum.Enum):
    WAIT = "wait"
    """Not terminal yet, or terminal but another attempt may follow."""
    RETRY = "retry"
    """Terminal failure that this process's submitter will retry."""
    SUCCEEDED = "succeeded"
    FAILED = "failed"


def effective_state(record: JobRecord, state: JobState) -> JobState:
    """NOT_FOUND with a stored successful result counts as SUCCEEDED (it was collected)."""
    if state.status is not JobStatus.NOT_FOUND:
        return state
    from kinetic.outcome import read_leader_outcome

    try:
        envelope = read_leader_outcome(record).envelope
    except (ObjectNotFoundError, IntegrityError):  # collecting it says what is wrong
        return state
    if isinstance(envelope, Succeeded):
        return JobState(status=JobStatus.SUCCEEDED, detail="result collected")
    return state


def child_state(
    record: JobRecord, state: JobState, collected: Callable[[], Mapping[int, object]]
) -> JobState:
    """:func:`effective_state`, and the reason of a child that was collected and cleaned up.

    A NOT_FOUND child whose outcome a ``results(cleanup=True)`` kept with the batch
    (``collected()``, read only when needed) before deleting the child's own records is
    NOT_FOUND with :data:`CLEANED_UP` as the reason, which is not a failure: its outcome can
    still be read.
    """
    seen = effective_state(record, state)
    if seen.status is not JobStatus.NOT_FOUND or record.group_index is None:
        return seen
    if record.group_index in collected():
        return JobState(status=JobStatus.NOT_FOUND, detail=CLEANED_UP)
    return seen


def retry_cause(handle: JobHandle, state: JobState) -> FailureCause:
    """The cause the batch's :class:`~kinetic_protocol.RetryRule` is asked about, for how
    ``handle``'s attempt ended. A preempted attempt reaches here only once the backend's own
    ``preemption_retries`` are spent.

    A child cancelled through its own handle is gone from under its batch: the spec retries a
    child that reached NOT_FOUND, so it counts as one that ended without a result (``exit``).
    Only the batch's own cancellation (``cancel()``, fail-fast) is final."""
    cause = cause_of(handle, state)
    if cause is FailureCause.CANCELLED and batch_cancelled(handle.record) is None:
        return FailureCause.EXIT
    return cause


@dataclass
class BatchState:
    """Everything about a batch that changes while it runs; guarded by ``lock``."""

    total: int
    rule: RetryRule
    """When this process runs a failed child again (none for an array batch: its backend's)."""
    jobs: ChildJobs
    """Each input's latest attempt; a list of handles given here is copied into one."""
    lock: threading.RLock = field(default_factory=threading.RLock)
    submission_errors: dict[int, Exception] = field(default_factory=dict)
    states: dict[int, JobState] = field(default_factory=dict)
    settled: dict[int, JobState] = field(default_factory=dict)
    settle_order: list[int] = field(default_factory=list)
    submission_done: threading.Event = field(default_factory=threading.Event)
    stopping: threading.Event = field(default_factory=threading.Event)
    interrupted: threading.Event = field(default_factory=threading.Event)
    """Set when Ctrl-C ended this process's wait on the batch: stop submitting at once, and
    leave the children already running alone."""
    submitter: threading.Thread | None = None
    """This process's background submitter, if any."""
    detached: threading.Event = field(default_factory=threading.Event)
    """Set when an attached handle stops following another process's submission (it resumed
    the batch itself)."""
    submitter_retries: bool = False
    """True while a live submitter in this process will retry failures."""
    more_attempts_possible: Callable[[], bool] = lambda: False
    """For attached batches: whether the original submitter may still add attempts (or is
    about to create a child whose record it has already written)."""
    fatal_error: str | None = None
    """Why submission stopped early on an error of its own (the store refused a write)."""
    submitter_gone: str | None = None
    """For attached batches: what became of a submitter that died before it finished."""
    stopped_because: str | None = None
    """Why submission ended before every input (cancelled, fail-fast), in words."""
    submitted_all: bool = False
    """For attached batches: the submitter recorded that it submitted every input (no
    cancel, fail-fast or error of its own), so an input without a record had one once."""
    unverified: dict[int, str] = field(default_factory=dict)
    """For attached batches: inputs with no attempt whose record key holds an object that
    does not verify (by index, the key), and nothing else shows that they ran."""

    def __post_init__(self) -> None:
        self.jobs = ChildJobs.of(self.jobs)
        self.changed = threading.Condition(self.lock)

    def notify(self) -> None:
        with self.changed:
            self.changed.notify_all()

    def wait_for_change(self, timeout: float) -> None:
        with self.changed:
            self.changed.wait(timeout)

    def stop_reason(self) -> str | None:
        """Why inputs were left unsubmitted, in words, if the batch stopped early."""
        with self.lock:
            if self.fatal_error:
                return f"the batch stopped submitting on an error: {self.fatal_error}"
            return self.submitter_gone or self.stopped_because

    def decide(self, handle: JobHandle, state: JobState) -> Decision:
        if not state.status.is_terminal:
            return Decision.WAIT
        if state.status is JobStatus.SUCCEEDED:
            return Decision.SUCCEEDED
        if is_cleaned_up(state):
            return Decision.FAILED  # settled: its outcome was kept when it was collected
        stopping = self.stopping.is_set()
        # The cause is read last: it may cost a read of a FAILED child's stored result.
        may_retry = (
            not stopping
            and self.rule.attempts_left(handle.attempt)
            and self.rule.covers(retry_cause(handle, state))
        )
        if may_retry and self.submitter_retries:
            return Decision.RETRY
        # Another process submits this batch: it may still retry the child, and since a child
        # record is written before its resource is created, a NOT_FOUND child may be one it
        # is creating right now.
        another = not stopping and not self.submitter_retries and self.more_attempts_possible()
        if another and (may_retry or state.status is JobStatus.NOT_FOUND):
            return Decision.WAIT
        return Decision.FAILED

    def settle(self, index: int, handle: JobHandle, state: JobState) -> bool:
        """Record ``index`` as done if ``handle`` is still its latest attempt."""
        with self.lock:
            if index in self.settled or self.jobs[index] is not handle:
                return False
            self.settled[index] = state
            self.settle_order.append(index)
        self.notify()
        return True

    def unsettled_jobs(self) -> dict[int, JobHandle]:
        with self.lock:
            return {
                index: job
                for index in self.jobs.submitted_indexes()
                if index not in self.settled and (job := self.jobs[index]) is not None
            }

    def all_settled(self) -> bool:
        """Submission has ended and every submitted child is settled."""
        if not self.submission_done.is_set():
            return False
        with self.lock:
            return all(index in self.settled for index in self.jobs.submitted_indexes())
