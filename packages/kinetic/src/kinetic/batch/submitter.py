"""Submit a batch's children in parallel, bounded by ``max_concurrent``, with retries and
fail-fast; optionally watching the children from a background thread.

Each attempt is one store write (its child record, written before its backend resource: no
job runs unknown to its batch) and one backend create; the function and inputs were stored
once with the batch. One backend ``statuses`` call per poll covers every active child; polls
come fast while children change and slow down while nothing does. While it runs, the submitter
holds the batch's lease (a heartbeat in the store), so readers can tell it is alive.
"""

import functools
import logging
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from concurrent.futures import FIRST_COMPLETED, Future, wait

from kinetic import _log
from kinetic._waiting import Backoff, PollPace
from kinetic.batch.lease import LeaseHolder
from kinetic.batch.spending import SpendingMeter
from kinetic.batch.state import BatchState, Decision, child_state
from kinetic.batch.workers import WorkerPool
from kinetic.bookkeeping.index import write_index
from kinetic.bookkeeping.kept import cancel_child, is_cleaned_up
from kinetic.bookkeeping.records import BatchRecords
from kinetic.handle import JobHandle
from kinetic_protocol import (
    NO_ENV,
    Backend,
    BackendError,
    BatchManifest,
    DiskFullError,
    JobRecord,
    JobStatus,
    KineticError,
    StorageError,
)

__all__ = ["FailurePolicy", "Submitter", "submit_child"]

log = _log.get_logger(__name__)
_MAX_PARALLEL_SUBMISSIONS = 16
_QUEUED_PER_WORKER = 2
"""Submissions handed to each pool thread ahead: the rest wait in ``Submitter.queue`` as two
ints, not a future each (about 1 KB: 100,000 of them were a third of the client's memory)."""
_STOP_CHECK_INTERVAL = 1.0
"""Seconds between looks for a cancel requested by another process."""


class _TakenOver(Exception):
    """This submitter found, before submitting, that another process had resumed its batch."""


def submit_child(
    backend: Backend,
    records: BatchRecords,
    record: JobRecord,
    *,
    env: Mapping[str, str] = NO_ENV,
) -> JobHandle:
    """Record one attempt, then create its backend resource (given the captured ``env``).

    The record comes first, so a job never runs unknown to its batch: a submitter killed in
    between leaves a record whose resource never appeared, which readers report and ``resume``
    creates. A store that refuses the record raises a ``StorageError`` before anything runs.
    """
    assert record.group_index is not None
    records.add_child(record.group_index, record.attempt, record.job_id)
    try:
        backend.submit(record, env=env)
    except KineticError:
        raise
    except Exception as exc:
        raise BackendError(
            f"The {record.backend} backend refused job {record.job_id}: {exc}"
        ) from exc
    return JobHandle.from_record(record)


def _caller_interrupted() -> bool:
    """The main thread has ended because of Ctrl-C: stop submitting instead of going on."""
    main = threading.main_thread()
    return not main.is_alive() and isinstance(getattr(sys, "last_value", None), KeyboardInterrupt)


class FailurePolicy:
    """What a final failure does to the rest of the batch (the spec's fail-fast table)."""

    def __init__(self, state: BatchState, *, fail_fast: bool, cancel_running: bool) -> None:
        self.state = state
        self.fail_fast = fail_fast
        self.cancel_running = fail_fast and cancel_running
        self.cancel_siblings: Callable[[], None] = lambda: None
        self.tripped = threading.Event()

    def on_failure(self) -> None:
        if not self.fail_fast or self.tripped.is_set():
            return
        self.tripped.set()
        with self.state.lock:
            self.state.stopped_because = "fail_fast stopped the batch after a failure"
        log.warning("batch.fail_fast", cancelling_running=self.cancel_running)
        if self.cancel_running:
            self.cancel_siblings()


class Submitter:
    """Runs the submission loop, in the calling thread or in a background thread."""

    def __init__(
        self,
        *,
        state: BatchState,
        backend: Backend,
        manifest: BatchManifest,
        records: BatchRecords,
        policy: FailurePolicy,
        lease: LeaseHolder,
        queue: list[tuple[int, int]] | None = None,
        active: dict[int, JobHandle] | None = None,
        unsubmittable: Mapping[int, Exception] | None = None,
        env: Mapping[str, str] = NO_ENV,
        meter: SpendingMeter | None = None,
    ) -> None:
        self.state = state
        self.backend = backend
        self.manifest = manifest
        self.records = records
        self.limit = manifest.max_concurrent
        self.policy = policy
        self.lease = lease
        self.env = env
        """The captured variables' values, for the backend (the stored call has the names)."""
        self.unsubmittable = dict(unsubmittable or {})
        """Inputs whose submission already failed (they cannot be pickled): recorded first."""
        if queue is None:
            queue = [(i, 0) for i in range(manifest.total_expected) if i not in self.unsubmittable]
        self.queue: deque[tuple[int, int]] = deque(queue)
        self.inflight: dict[Future[JobHandle], tuple[int, int]] = {}
        self.active: dict[int, JobHandle] = dict(active or {})
        self.thread: threading.Thread | None = None
        self.pace = PollPace()  # also as each submission that lands wakes the loop
        self.vanished = False
        """A child failed or was deleted since the last look for a cancel request."""
        self.meter = meter
        """The batch's spending against its ``max_cost``; None: no cap."""
        self.cost_capped = ""
        """Why no new input is submitted any more: the cap was reached (in words)."""
        self.fatal: StorageError | DiskFullError | None = None
        """The store refused a child's record, or the disk was full for its job's files: the
        batch cannot go on submitting now."""

    # -- entry points ----------------------------------------------------------------------

    def start_background(self) -> None:
        self.state.submitter_retries = self.state.rule.retries > 0
        self.thread = threading.Thread(
            target=self.run, name=f"kinetic-batch-{self.manifest.group_id}", daemon=False
        )
        self.state.submitter = self.thread
        self.thread.start()

    def run(self, *, watch: bool = True) -> None:
        cancelled = False
        self.lease.start(self._submitted)
        try:
            for index, error in self.unsubmittable.items():
                self._submission_failed(index, error)
            cancelled = self._loop(watch=watch)
        except BaseException as exc:
            log.exception("batch submitter crashed", group_id=self.manifest.group_id)
            self._record_fatal(exc)
            cancelled = True
            raise
        finally:
            self.state.submitter_retries = False
            self.lease.stop()
            try:
                if not self.lease.lost.is_set():  # else the process that resumed it finishes
                    self._mark_complete(cancelled)
            finally:
                self.state.submission_done.set()
                self.state.notify()

    def _submitted(self) -> int:
        with self.state.lock:
            return self.state.jobs.submitted()

    def _record_fatal(self, exc: BaseException) -> None:
        with self.state.lock:
            if self.state.fatal_error is None:
                self.state.fatal_error = f"{type(exc).__name__}: {exc}"

    def _mark_complete(self, cancelled: bool) -> None:
        try:
            done = self.records.mark_complete(
                self._submitted(),
                cancelled=cancelled,
                fail_fast=self.policy.tripped.is_set(),
                error=self.state.fatal_error or "",
                cost_capped=self.cost_capped if self.queue else "",
            )
        except KineticError:
            # Readers see the heartbeat stop and call the submitter gone; this handle knows.
            log.warning(
                "could not record the end of the batch's submission",
                group_id=self.manifest.group_id,
                exc_info=True,
            )
            return
        if self.state.fatal_error is not None:
            return  # a record may have landed whose job this process never saw: no index
        try:
            write_index(self.records, done, self._recorded(), self.manifest.total_expected)
        except KineticError:
            # Readers find no index that fits the completion and read the child records.
            log.warning(
                "could not write the batch's index", group_id=self.manifest.group_id, exc_info=True
            )

    def _recorded(self) -> dict[int, int]:
        """The latest recorded attempt of each input: what this process wrote or read back,
        and each handle it holds."""
        latest = dict(self.records.latest_seen)
        with self.state.lock:
            for index, attempt in self.state.jobs.latest_attempts().items():
                if attempt > latest.get(index, -1):
                    latest[index] = attempt
        return latest

    # -- the loop --------------------------------------------------------------------------

    def _can_launch(self) -> bool:
        if not self.queue or self.policy.tripped.is_set() or self._halted() or self._capped():
            return False
        return self.limit is None or len(self.active) + len(self.inflight) < self.limit

    def _capped(self) -> bool:
        """Whether the batch's list cost has reached its ``max_cost`` (said once when it
        does): no new input is submitted after that."""
        if self.cost_capped or self.meter is None or not self.meter.reached():
            return bool(self.cost_capped)
        self.cost_capped = self.meter.describe()
        with self.state.lock:
            self.state.stopped_because = f"max_cost stopped the batch: {self.cost_capped}"
        _log.say(
            f"Batch {self.manifest.group_id} stopped submitting: its {self.cost_capped}; "
            f"{len(self.queue)} inputs not submitted. batch.resume(max_cost=...) (or `kinetic "
            f"batch resume {self.manifest.group_id} --max-cost USD`) with a higher cap runs them.",
            logging.WARNING,
        )
        return True

    def _must_watch(self) -> bool:
        """Whether active children still need this thread once nothing is left to submit."""
        return self.state.rule.retries > 0 or self.policy.cancel_running

    def _loop(self, *, watch: bool) -> bool:
        """Returns True if submission stopped early (cancel, Ctrl-C)."""
        backoff = Backoff(*self.backend.poll_bounds)
        workers = min(_MAX_PARALLEL_SUBMISSIONS, self.limit or _MAX_PARALLEL_SUBMISSIONS)
        pool = WorkerPool(workers, name=f"kinetic-submit-{self.manifest.group_id}")
        handed = workers * _QUEUED_PER_WORKER
        next_stop_check = time.monotonic() + _STOP_CHECK_INTERVAL
        try:
            while True:
                if time.monotonic() >= next_stop_check:
                    next_stop_check = time.monotonic() + _STOP_CHECK_INTERVAL
                    if self.records.stop_requested():
                        self.state.stopping.set()
                if (
                    self.state.stopping.is_set()
                    or self.state.interrupted.is_set()
                    or _caller_interrupted()
                ):
                    self._drain_after_stop()
                    return True
                if self._halted():  # the store failed, or another process took over
                    self._drain_after_stop()
                    return False
                while len(self.inflight) < handed and self._can_launch():
                    index, attempt = self.queue.popleft()
                    future = pool.submit(functools.partial(self._submit_one, index, attempt))
                    self.inflight[future] = (index, attempt)
                changed = self._collect_submissions()
                due = self.pace.due()
                if due and watch and self.active and (self.queue or self._must_watch()):
                    changed |= self._watch()
                    if self.vanished:  # failed or deleted: look for a cancel before relaunching
                        self.vanished = False
                        next_stop_check = time.monotonic()
                        continue
                if self._finished(watch=watch):
                    return False
                if changed:
                    backoff.reset()
                self._pause(backoff)
        finally:
            for future in self.inflight:
                future.cancel()
            pool.shutdown()

    def _drain_after_stop(self) -> None:
        """Stopped: queued submissions never start; ones already running are let finish and
        their jobs cancelled, so nothing the batch submitted keeps running after a cancel."""
        for future in list(self.inflight):
            future.cancel()
        wait(list(self.inflight))
        self._collect_submissions()
        if self.state.stopping.is_set():
            for job in self.active.values():
                self._cancel_late(job)

    def _halted(self) -> bool:
        return self.fatal is not None or self.lease.lost.is_set()

    def _finished(self, *, watch: bool) -> bool:
        """Nothing left to launch, and no active child that still needs this thread."""
        nothing_to_launch = not self.queue or self.policy.tripped.is_set() or self._capped()
        if not nothing_to_launch or self.inflight:
            return False
        return not watch or not self.active or not self._must_watch()

    def _pause(self, backoff: Backoff) -> None:
        """Wait for a submission to finish, a stop, or the next poll, whichever comes first."""
        delay = max(backoff.next_delay, self.pace.wait())
        if self.inflight:
            wait(list(self.inflight), timeout=delay, return_when=FIRST_COMPLETED)
        else:
            self.state.stopping.wait(delay)
        backoff.advance()

    def _submit_one(self, index: int, attempt: int) -> JobHandle:
        if not self.lease.holds():
            raise _TakenOver(f"batch {self.manifest.group_id} was resumed by another process")
        record = self.manifest.child_record(index, attempt)
        return submit_child(self.backend, self.records, record, env=self.env)

    def _collect_submissions(self) -> bool:
        done = [future for future in self.inflight if future.done()]
        for future in done:
            index, attempt = self.inflight.pop(future)
            if future.cancelled() or self.lease.lost.is_set():
                continue  # lost: the process that resumed the batch accounts for it
            error = future.exception()
            if error is None:
                handle = future.result()
                with self.state.lock:
                    self.state.jobs[index] = handle
                self.active[index] = handle
                if self.policy.cancel_running and self.policy.tripped.is_set():
                    self._cancel_late(handle)
            elif isinstance(error, StorageError | DiskFullError):
                # The input is fine; the store (or the disk) is not. Stop, and say so
                # everywhere: ``resume`` submits the rest once the cause is gone.
                _log.say(
                    f"Batch {self.manifest.group_id} stopped submitting: {error}", logging.ERROR
                )
                self.fatal = error
                self._record_fatal(error)
                self.queue.appendleft((index, attempt))
            elif isinstance(error, Exception):
                self._submission_failed(index, error)
            else:
                raise error
        if done:
            self.state.notify()
        return bool(done)

    def _submission_failed(self, index: int, error: Exception) -> None:
        if not self.lease.holds():
            return  # a resumer owns the batch now: this input is its to report
        with self.state.lock:
            self.state.submission_errors[index] = error
        try:
            self.records.add_submission_error(index, error)
        except Exception:
            log.warning("could not record a submission error", index=index, exc_info=True)
        self.policy.on_failure()

    def _cancel_late(self, job: JobHandle) -> None:
        """A child whose submission landed after fail-fast cancelled its siblings."""
        reason = self.state.stop_reason() or "the batch stopped"
        try:
            cancel_child(self.records, job.record, reason)
        except Exception:
            log.warning("could not cancel a late sibling", job_id=job.job_id, exc_info=True)

    def _watch(self) -> bool:
        """One poll of every active child; settles, retries and applies fail-fast."""
        handles = list(self.active.items())
        try:
            with self.pace.polling():
                states = self.backend.statuses([job.record for _, job in handles])
        except Exception:
            log.warning("batch.poll_failed", group_id=self.manifest.group_id, exc_info=True)
            return False  # the next poll tries again; a passing API error must not end the batch
        changed = False
        kept: Mapping[int, object] | None = None

        def collected() -> Mapping[int, object]:
            nonlocal kept  # read once per poll, and only if a child has gone
            if kept is None:
                kept = self.records.collected()
            return kept

        for index, job in handles:
            # A child another process collected and cleaned up is settled, not failed: retrying
            # it would run its input twice.
            state = child_state(job.record, states[job.job_id], collected)
            if self.meter is not None:
                self.meter.observe(job, state)
            self.vanished |= state.status in (JobStatus.NOT_FOUND, JobStatus.FAILED)
            with self.state.lock:
                if self.state.states.get(index) != state:
                    self.state.states[index] = state
                    changed = True
            decision = self.state.decide(job, state)
            if decision is Decision.WAIT:
                continue
            del self.active[index]
            if decision is Decision.RETRY:
                self._retry(index, job)
                continue
            self.state.settle(index, job, state)
            if decision is Decision.FAILED and not is_cleaned_up(state):
                self.policy.on_failure()
        if changed:
            self.state.notify()
        return changed

    def _retry(self, index: int, job: JobHandle) -> None:
        """Free the failed attempt's backend resource (its stored artifacts stay) and requeue."""
        log.info(
            "batch.retry", group_id=self.manifest.group_id, index=index, attempt=job.attempt + 1
        )
        try:
            job.delete_resource(timeout=60, poll_interval=0.5)
        except Exception:
            log.warning("could not remove a failed attempt", job_id=job.job_id, exc_info=True)
        self.queue.appendleft((index, job.attempt + 1))
