"""Collecting a batch: read each child's outcome once, keep it with the batch, then clean up.

Collection is not destruction: with ``cleanup``, outcomes are written to the batch's own
records (``collected/``) before any child's copy is deleted, in groups as children settle. A
collection killed halfway, or a second one from another process, still finds every outcome.
"""

import re
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from kinetic import _log
from kinetic._results import rebuild_exception, unwrap
from kinetic.batch.causes import failed_children
from kinetic.batch.errors import BatchError, SkippedInputError
from kinetic.batch.state import BatchState
from kinetic.bookkeeping.kept import is_cleaned_up
from kinetic.bookkeeping.records import BatchRecords
from kinetic.handle import JobHandle
from kinetic.trust import OutcomeKind, SealedOutcome, open_outcome
from kinetic_protocol import (
    CollectedFailure,
    CollectedOutcome,
    HostSelection,
    JobFailedError,
    JobNotFoundError,
    JobState,
    JobStatus,
    KineticError,
    Succeeded,
    layout,
)
from kinetic_protocol.host_groups import record_hosts

__all__ = ["Collector"]

log = _log.get_logger(__name__)
_PARALLEL_CLEANUPS = 16
_KEEP_EVERY = 64
"""Outcomes are kept with the batch (and their children cleaned up) in one store write per
group of children that settle together, at most this many, and whenever collection waits for
more: cleanup follows each child promptly and overlaps the wait for the rest."""
_FAILURE_LINES = 50
_FAILURE_BYTES = 16384
"""A failed child's last lines kept with the batch: at most this many lines and bytes."""
Settled = Callable[[Callable[[], None]], Iterator[int]]
"""Yields indices as children settle; calls its argument whenever it is about to wait."""


class Collector:
    """Reads and remembers outcomes of one batch's children (for one handle)."""

    def __init__(self, group_id: str, state: BatchState, records: BatchRecords) -> None:
        self.group_id = group_id
        self.state = state
        self.records = records
        self.values: dict[int, Any] = {}
        self.errors: dict[int, BaseException] = {}
        self.envelopes: dict[int, SealedOutcome] = {}
        self.cleaned: set[int] = set()
        self.failures: list[JobHandle] | None = None
        self._kept_outcomes: dict[int, CollectedOutcome] | None = None

    # -- one outcome -------------------------------------------------------------------------

    def outcome(self, index: int) -> tuple[Any, bool]:
        """``(value or exception, failed)`` of a settled child, read once: a later collection
        returns the same, whatever was cleaned up in between."""
        if index in self.values:
            return self.values[index], False
        if index in self.errors:
            return self.errors[index], True
        job = self.state.jobs[index]
        assert job is not None
        try:
            envelope = self._envelope(index, job, self.state.settled[index])
        except Exception as exc:
            self.errors[index] = exc
            return exc, True
        self.envelopes[index] = envelope
        if isinstance(envelope.envelope, Succeeded):
            self.values[index] = unwrap(envelope.envelope)
            return self.values[index], False
        self.errors[index] = rebuild_exception(envelope.envelope)
        return self.errors[index], True

    def _envelope(self, index: int, job: JobHandle, state: JobState) -> SealedOutcome:
        if is_cleaned_up(state):
            kept = self._kept_for(index, job)
            if kept is None:
                said = self.records.collected_failures().get(index)
                if said is not None and said.job_id == job.job_id:
                    raise JobFailedError(
                        f"Input {index} of batch {self.group_id} ({job.job_id}) failed "
                        f"({said.failure.cause.value}: {said.failure.reason}) without storing "
                        "a result, and was collected and cleaned up. Its last lines:\n"
                        f"{said.last_lines}"
                    )
                raise JobNotFoundError(
                    f"Input {index} of batch {self.group_id} ({job.job_id}) was collected and "
                    "cleaned up by another results(cleanup=True), which kept no outcome for it "
                    "(it had left none)."
                )
            return kept
        try:
            return job.sealed_outcome(state)
        except KineticError:
            # Collected since this one's status poll, by another collection or through the
            # child's own handle (``job.result()``): either kept the outcome with the batch
            # before deleting the child's copy.
            kept = self._kept_for(index, job)
            if kept is not None:
                return kept
            if state.status is JobStatus.NOT_FOUND and self.state.submitter_gone:
                raise JobNotFoundError(
                    f"Input {index} of batch {self.group_id} ({job.job_id}) never ran: "
                    f"{self.state.submitter_gone}."
                ) from None
            raise

    def _kept_for(self, index: int, job: JobHandle) -> SealedOutcome | None:
        """``job``'s outcome as a collection kept it with the batch, opened, if there is one."""
        kept = self._kept(index)
        if kept is None or kept.job_id != job.job_id:
            return None
        key = f"{layout.collected_prefix(self.group_id)} (the kept outcome of {job.job_id})"
        kind: OutcomeKind = "host-result" if kept.kind == "host-result" else "result"
        return open_outcome(job.record, kept.envelope, key=key, kind=kind)

    def _kept(self, index: int) -> CollectedOutcome | None:
        """The outcome a collection kept for ``index``: the batch's kept outcomes are read
        once, and again only for an index they lack (another process may have kept it since)."""
        if self._kept_outcomes is None or index not in self._kept_outcomes:
            self._kept_outcomes = self.records.collected()
        return self._kept_outcomes.get(index)

    def never_submitted(self, index: int) -> Exception:
        """Why input ``index`` has no job: its submission raised, the batch stopped, or (in a
        batch whose every input was submitted) its record is gone or does not verify."""
        error = self.state.submission_errors.get(index)
        if error is not None:
            return error
        resume = f"`kinetic batch resume {self.group_id}` (or batch.resume()) runs it once"
        with self.state.lock:
            planted = self.state.unverified.get(index)
            submitted_all = self.state.submitted_all
        if planted is not None:
            where = f"{self.records.store.uri}/{planted}"
            return SkippedInputError(
                f"Input {index} of batch {self.group_id} has no record that verifies: {where} "
                "holds an object that does not (a store writer's, or its record changed), and "
                f"no job, result or kept outcome of it was found. {resume}."
            )
        if submitted_all:
            return SkippedInputError(
                f"Input {index} of batch {self.group_id} has no record, though its submitter "
                f"recorded that it submitted every input: its record was deleted, and no job, "
                f"result or kept outcome of it was found. {resume} again."
            )
        reason = self.state.stop_reason() or "the store holds no record of its submission"
        return SkippedInputError(
            f"Input {index} of batch {self.group_id} was never submitted: {reason}."
        )

    # -- every outcome -----------------------------------------------------------------------

    def results(
        self,
        settled: Settled,
        *,
        ordered: bool,
        cleanup: bool,
        return_exceptions: bool,
        clean_child: Callable[[JobHandle], None],
    ) -> list[Any]:
        """Outcomes of the children as ``settled`` yields them; see ``BatchHandle.results``."""
        outcomes: dict[int, Any] = {}
        completion: list[int] = []
        failed: list[int] = []
        cleaned_up: list[int] = []
        with ThreadPoolExecutor(_PARALLEL_CLEANUPS, thread_name_prefix="kinetic-cleanup") as pool:
            keeper = _Keeper(self, lambda job: pool.submit(clean_child, job))
            for index in settled(keeper.flush):
                outcomes[index], is_failure = self.outcome(index)
                completion.append(index)
                if is_failure:
                    failed.append(index)
                if is_cleaned_up(self.state.settled[index]):
                    cleaned_up.append(index)
                elif cleanup and index not in self.cleaned:
                    keeper.add(index)
            keeper.flush()
        return self._assemble(outcomes, completion, failed, cleaned_up, ordered, return_exceptions)

    def _assemble(
        self,
        outcomes: dict[int, Any],
        completion: list[int],
        failed: list[int],
        cleaned_up: list[int],
        ordered: bool,
        return_exceptions: bool,
    ) -> list[Any]:
        total = self.state.total
        gone = [i for i in cleaned_up if isinstance(outcomes[i], JobNotFoundError)]
        named = [
            (i, job) for i in failed if i not in gone and (job := self.state.jobs[i]) is not None
        ]
        # What failures() reads afresh, for these children: a failed child that this or an
        # earlier collection cleaned up counts by the failure the batch kept for it.
        self.failures = failed_children(
            self.state.jobs, [(i, self.state.settled[i]) for i, _ in named], self.records
        )
        with self.state.lock:
            submission_errors = dict(self.state.submission_errors)
        for index in range(total):
            if index not in outcomes:
                outcomes[index] = self.never_submitted(index)
                completion.append(index)
                failed.append(index)
        if failed and not return_exceptions:
            failed_set = set(failed)
            partial = [None if i in failed_set else outcomes[i] for i in range(total)]
            raise BatchError(
                self.group_id,
                [job for _, job in named],
                partial,
                submission_errors,
                cleaned_up=gone,
            )
        return [outcomes[i] for i in (range(total) if ordered else completion)]


def _failure_summary(job: JobHandle, state: BatchState, index: int) -> CollectedFailure | None:
    """Why a failed child ended, and its last lines, to keep with the batch before the child
    (and its kept output) is deleted; None when nothing says why."""
    from kinetic._context import backend_for
    from kinetic.failure import failure_of
    from kinetic.kept_output import read_output

    failure = failure_of(job, state.settled[index])
    if failure is None:
        return None
    try:
        lines = read_output(
            backend_for(job.record),
            job.record,
            tail=_FAILURE_LINES,
            host=_failed_host(job, failure.reason),
        )
    except KineticError:
        lines = ""
    return CollectedFailure(
        index=index, job_id=job.job_id, failure=failure, last_lines=lines[-_FAILURE_BYTES:]
    )


_NAMED_HOST = re.compile(r"\bhost (\d+) of \d+\b")


def _failed_host(job: JobHandle, reason: str) -> HostSelection:
    """Whose lines a failed multi-host child keeps: the host its failure names (the slice
    stops the others, and the leader may never have run the function), else every host's.
    None for a one-host job."""
    if record_hosts(job.record) == 1:
        return None
    named = _NAMED_HOST.search(reason)
    return int(named.group(1)) if named else "all"


class _Keeper:
    """Keeps collected outcomes with the batch, then hands their children to ``clean``."""

    def __init__(self, collector: Collector, clean: Callable[[JobHandle], object]) -> None:
        self.collector = collector
        self.clean = clean
        self.waiting: list[int] = []

    def add(self, index: int) -> None:
        self.waiting.append(index)
        if len(self.waiting) >= _KEEP_EVERY:
            self.flush()

    def flush(self) -> None:
        waiting, self.waiting = self.waiting, []
        if not waiting:
            return
        collector = self.collector
        jobs = {i: job for i in waiting if (job := collector.state.jobs[i]) is not None}
        settled = collector.state.settled
        kept = [
            CollectedOutcome(
                index=i,
                job_id=job.job_id,
                envelope=kept.sealed,
                kind=kept.kind,
                placement=state.placement if (state := settled.get(i)) else None,
            )
            for i, job in jobs.items()
            if (kept := collector.envelopes.get(i)) is not None
        ]
        failures = [
            failed
            for i, job in jobs.items()
            if i in collector.errors and (failed := _failure_summary(job, collector.state, i))
        ]
        if kept or failures:
            try:
                if kept:
                    collector.records.add_collected(kept)
                if failures:
                    collector.records.add_collected_failures(failures)
            except KineticError:
                log.warning(
                    "could not keep collected outcomes with the batch; their children are kept",
                    group_id=collector.group_id,
                    exc_info=True,
                )
                return
        for index, job in jobs.items():
            collector.cleaned.add(index)
            self.clean(job)
