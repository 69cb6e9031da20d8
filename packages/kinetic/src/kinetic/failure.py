"""Why an attempt ended without a value: the backend's cause, refined by what the job stored.

A backend sees the outside of a job (killed for memory, preempted, past its deadline, an image
that would not pull, or just a process that ended badly). Only the stored result says whether
the function itself raised, or a Kinetic phase before it failed; only a cancellation record
says that a job which is gone was cancelled. This module puts the three together.
"""

from datetime import UTC, datetime
from typing import Protocol

import msgspec

from kinetic._context import store_for
from kinetic.bookkeeping.kept import batch_cancelled, kept_failure_summary, kept_outcome
from kinetic.trust import OutcomeKind, SealedOutcome, open_outcome
from kinetic_protocol import (
    AttemptFailure,
    CollectedOutcome,
    CorruptRecordError,
    Failed,
    FailureCause,
    JobCancelled,
    JobRecord,
    JobState,
    JobStatus,
    KineticError,
    ObjectNotFoundError,
    ResultEnvelope,
    Succeeded,
    layout,
)
from kinetic_protocol.causes import BACKEND_DECIDED
from kinetic_protocol.records import decode_json, encode_json

__all__ = [
    "USER_PHASES",
    "Attempt",
    "cause_of",
    "failed_attempt",
    "failure_document",
    "failure_of",
    "from_envelope",
    "kept_failure",
    "kept_value",
    "record_cancel",
]

USER_PHASES = frozenset({"run", "serialize_result"})
"""Phases in which a failure is the function's own: it raised, or returned what cannot be
pickled. A failure in any other phase happened before the function ran (``infrastructure``)."""
CANCELLED_BY_USER = "cancelled by the user"


class Attempt(Protocol):
    """What an attempt's failure is read from (a :class:`~kinetic.JobHandle` is one): its
    stored record, and the outcome the job stored, as a terminal ``state`` explains it."""

    @property
    def record(self) -> JobRecord: ...

    def sealed_outcome(self, state: JobState) -> SealedOutcome: ...


def failure_of(job: Attempt, state: JobState) -> AttemptFailure | None:
    """How ``job``'s attempt ended without a value, given its current ``state``; None while it
    is pending or running, once it succeeded, and when it is gone for no recorded reason."""
    if state.status is JobStatus.FAILED:
        return failed_attempt(job, state)
    if state.status is JobStatus.NOT_FOUND:
        return _cancelled(job) or _kept_failure(job)
    return None


def cause_of(job: Attempt, state: JobState) -> FailureCause:
    """The cause a batch's retry decision goes by, for a terminal ``state`` that is not
    success: a child gone for no recorded reason counts as ``exit`` (it ended without a
    result), which ``retries`` cover as the spec says."""
    failure = failure_of(job, state)
    return FailureCause.EXIT if failure is None else failure.cause


def failed_attempt(job: Attempt, state: JobState) -> AttemptFailure:
    """The failure of an attempt whose state is FAILED."""
    attempt = job.record.attempt
    if state.cause in BACKEND_DECIDED:
        assert state.cause is not None
        return AttemptFailure(
            cause=state.cause, reason=state.reason(), attempt=attempt, exit_code=state.exit_code
        )
    try:
        envelope = job.sealed_outcome(state).envelope
    except KineticError:  # it stored nothing, or nothing that can be trusted
        envelope = None
    if isinstance(envelope, Failed):
        return from_envelope(envelope, attempt, state.exit_code)
    return AttemptFailure(
        cause=state.cause or FailureCause.EXIT,
        reason=state.reason() or "ended without storing a result",
        attempt=attempt,
        exit_code=state.exit_code,
    )


def from_envelope(envelope: Failed, attempt: int, exit_code: int | None = None) -> AttemptFailure:
    """The failure a stored ``Failed`` result describes: the function's, or a phase's before it."""
    exc_type = envelope.exc_type.removeprefix("builtins.")
    text = f"{exc_type}: {envelope.message}" if envelope.message else exc_type
    if envelope.hosts > 1:
        text = f"host {envelope.host} of {envelope.hosts}: {text}"
    if envelope.phase in USER_PHASES:
        cause = FailureCause.USER
    else:
        cause = FailureCause.INFRASTRUCTURE
        text = f"failed in phase {envelope.phase}: {text}"
    return AttemptFailure(
        cause=cause, reason=text, attempt=attempt, phase=envelope.phase, exit_code=exit_code
    )


def _cancelled(job: Attempt) -> AttemptFailure | None:
    """A cancellation recorded for this attempt: by its batch (a signed batch record), or by
    ``cancel()``."""
    record = job.record
    by_batch = batch_cancelled(record)
    if by_batch is not None:
        return AttemptFailure(
            cause=FailureCause.CANCELLED, reason=by_batch.reason, attempt=record.attempt
        )
    key = layout.cancelled_job_key(record.job_id)
    try:
        found = decode_json(store_for(record).read(key), JobCancelled, what=key)
    except (ObjectNotFoundError, CorruptRecordError):  # a garbled note names no cause
        return None
    return AttemptFailure(cause=FailureCause.CANCELLED, reason=found.reason, attempt=record.attempt)


def _kept_failure(job: Attempt) -> AttemptFailure | None:
    """A collected child's failure: from the outcome its batch kept, else from the failure
    summary the batch kept (a child killed before it stored a result leaves only that)."""
    if job.record.group_index is None:
        return None
    found = kept_failure(job, kept_outcome(job.record))
    if found is not None:
        return found
    summary = kept_failure_summary(job.record)
    return None if summary is None else summary.failure


def _kept_envelope(job: Attempt, kept: CollectedOutcome) -> ResultEnvelope | None:
    """The outcome a batch kept for ``job``, verified; None if it does not verify."""
    key = f"{layout.collected_prefix(job.record.group_id or '')} (kept for {job.record.job_id})"
    kind: OutcomeKind = "host-result" if kept.kind == "host-result" else "result"
    try:
        return open_outcome(job.record, kept.envelope, key=key, kind=kind).envelope
    except KineticError:
        return None


def kept_failure(job: Attempt, kept: CollectedOutcome | None) -> AttemptFailure | None:
    """A batch child collected and cleaned up: the failure its batch kept, if it failed."""
    if kept is None or kept.job_id != job.record.job_id:
        return None
    envelope = _kept_envelope(job, kept)
    if isinstance(envelope, Failed):
        return from_envelope(envelope, job.record.attempt)
    return None


def kept_value(job: Attempt, kept: CollectedOutcome) -> bool:
    """Whether the outcome a batch kept for ``job`` verifies and is a value: what
    ``results()`` returns rather than raises."""
    return kept.job_id == job.record.job_id and isinstance(_kept_envelope(job, kept), Succeeded)


def record_cancel(job: Attempt, reason: str = CANCELLED_BY_USER) -> None:
    """Say, before the job is stopped, that it was cancelled (its resource goes with it)."""
    record = job.record
    cancelled = JobCancelled(
        job_id=record.job_id,
        attempt=record.attempt,
        cancelled_at=datetime.now(UTC).isoformat(timespec="seconds"),
        reason=reason,
    )
    store_for(record).write(layout.cancelled_job_key(record.job_id), encode_json(cancelled))


def failure_document(failure: AttemptFailure | None) -> dict[str, object] | None:
    """``failure`` as plain JSON values (for ``--json``)."""
    return None if failure is None else msgspec.to_builtins(failure)
