"""One look at a batch's children: one backend call for all of them, and each child that
is done settled (the fail-fast policy told of each final failure)."""

import functools
from collections.abc import Callable

from kinetic.batch.state import BatchState, Decision, child_state
from kinetic.batch.submitter import FailurePolicy
from kinetic.bookkeeping.kept import is_cleaned_up
from kinetic.bookkeeping.records import BatchRecords
from kinetic_protocol import Backend, BatchManifest, JobRecord, JobState

__all__ = ["collected_once", "latest_states", "observe"]


def latest_states(
    manifest: BatchManifest, backend: Backend, state: BatchState, records: dict[int, JobRecord]
) -> dict[int, tuple[JobRecord, JobState]]:
    """One backend call for ``records`` (by input): each input's latest attempt and its state.

    The backend of an array batch runs a failed input again itself, as a new attempt
    that the state of the one before names (``next_attempt``): that attempt takes the
    input's place in ``state.jobs``, and one more call reads the attempts so followed.
    Works on records, not handles: a look at 100,000 children makes none.
    """
    states = backend.statuses(list(records.values()))
    found = {index: (record, states[record.job_id]) for index, record in records.items()}
    later = {
        index: seen.next_attempt
        for index, (record, seen) in found.items()
        if seen.next_attempt is not None and seen.next_attempt > record.attempt
    }
    if later:
        state.jobs.follow(later)
        followed = {index: manifest.child_record(index, n) for index, n in later.items()}
        again = backend.statuses(list(followed.values()))
        found |= {index: (record, again[record.job_id]) for index, record in followed.items()}
    return found


def collected_once(records: BatchRecords) -> Callable[[], dict[int, object]]:
    """The inputs whose outcome, or failure, a collection kept before cleaning up, read at
    most once per look, and only if needed."""

    def kept() -> dict[int, object]:
        return {**records.collected_failures(), **records.collected()}

    return functools.cache(kept)


def observe(
    manifest: BatchManifest,
    backend: Backend,
    records: BatchRecords,
    state: BatchState,
    policy: FailurePolicy,
) -> None:
    """One backend call for every unsettled child; settle what is done."""
    pending = state.unsettled_jobs()
    if not pending:
        return
    asked = {index: job.record for index, job in pending.items()}
    latest = latest_states(manifest, backend, state, asked)
    collected = collected_once(records)
    for index, (record, seen) in latest.items():
        if seen.next_attempt is not None:
            continue  # a still later attempt runs: the next look follows it
        job = pending[index] if record is asked[index] else state.jobs[index]
        if job is None or job.attempt != record.attempt:
            continue  # another attempt took its place meanwhile: the next look reads it
        child = child_state(record, seen, collected)
        with state.lock:
            state.states[index] = child
        decision = state.decide(job, child)
        if decision in (Decision.SUCCEEDED, Decision.FAILED):
            settled = state.settle(index, job, child)
            if settled and decision is Decision.FAILED and not is_cleaned_up(child):
                policy.on_failure()
