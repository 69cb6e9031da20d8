"""``BatchHandle``: observe, collect, cancel and clean up a batch as one thing."""

import collections
import contextlib
import dataclasses
import functools
import os
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from kinetic import _log
from kinetic._interrupted import say_batch_left_running
from kinetic._waiting import Backoff, Deadline, check_timeout
from kinetic.batch.cleanup import delete_batch, in_parallel
from kinetic.batch.collect import Collector
from kinetic.batch.lease import (
    LeaseHolder,
    SubmitterStatus,
    stopped_on_its_own_error,
    submitter_status,
)
from kinetic.batch.records import BatchRecords, cancel_child
from kinetic.batch.resume import plan_resume
from kinetic.batch.state import BatchState, Decision, child_state, is_cleaned_up
from kinetic.batch.submitter import FailurePolicy, Submitter
from kinetic.batch.views import BatchViews
from kinetic.env_capture import recapture_env
from kinetic.handle import JobHandle
from kinetic_protocol import (
    AttemptFailure,
    Backend,
    BatchManifest,
    CallDescriptor,
    JobState,
    JobStatus,
    layout,
)
from kinetic_protocol.causes import retry_causes
from kinetic_protocol.signing import open_json

__all__ = ["BatchHandle"]

log = _log.get_logger(__name__)


def _live_jobs(self: "BatchHandle") -> list[JobHandle | None]:
    with self._state.lock:
        return list(self._state.jobs)


@dataclasses.dataclass(init=False, repr=False, eq=False)
class BatchHandle(BatchViews):
    """Handle for the children of one ``run_async_map`` call, in input order.

    ``jobs[i]`` is the handle of input ``i``'s latest attempt, or ``None`` while (or if) it is
    not submitted. Built by ``run_async_map()`` or :func:`kinetic.attach_batch`, never by hand.

    The public fields are the API reference's: ``group_id``, ``name``, ``tags`` and ``jobs``,
    which ``dataclasses.fields()`` lists and ``dataclasses.asdict()`` reads (each job as its
    handle's fields). ``jobs`` is a fresh copy on every read: the submitter fills it in.
    """

    group_id: str
    name: str | None
    tags: dict[str, str]
    # A read-only view of the live list, declared as a field so that dataclasses see it.
    jobs: list[JobHandle | None] = property(_live_jobs)  # type: ignore[assignment]  # noqa: RUF009

    def __init__(
        self,
        *,
        manifest: BatchManifest,
        state: BatchState,
        backend: Backend,
        records: BatchRecords,
        policy: FailurePolicy,
    ) -> None:
        self.group_id = manifest.group_id
        self.name = manifest.name
        self.tags = dict(manifest.tags)
        self._manifest = manifest
        self._state = state
        self._backend = backend
        self._records = records
        self._policy = policy
        self._collector = Collector(self.group_id, state, records)
        policy.cancel_siblings = self._cancel_running

    @property
    def created_at(self) -> str:
        """When the batch was submitted (ISO 8601, UTC)."""
        return self._manifest.created_at

    @property
    def func_name(self) -> str:
        return self._manifest.func_name

    @property
    def submission_failures(self) -> dict[int, Exception]:
        """Inputs whose submission raised (their ``jobs`` slot stays ``None``)."""
        with self._state.lock:
            return dict(self._state.submission_errors)

    def __repr__(self) -> str:
        return f"BatchHandle(group_id={self.group_id!r}, jobs={len(self._state.jobs)})"

    # -- observation -----------------------------------------------------------------------

    def _latest_states(self, jobs: dict[int, JobHandle]) -> dict[int, tuple[JobHandle, JobState]]:
        """One backend call for ``jobs``: each input's latest attempt and its state.

        The backend of an array batch runs a failed input again itself, as a new attempt
        that the state of the one before names (``next_attempt``): that attempt takes the
        input's place in ``jobs``, and one more call reads the attempts so followed.
        """
        states = self._backend.statuses([job.record for job in jobs.values()])
        found = {index: (job, states[job.job_id]) for index, job in jobs.items()}
        followed: dict[int, JobHandle] = {}
        for index, (job, state) in found.items():
            if state.next_attempt is not None and state.next_attempt > job.attempt:
                later = JobHandle.from_record(
                    self._manifest.child_record(index, state.next_attempt)
                )
                with self._state.lock:
                    if self._state.jobs[index] is job:
                        self._state.jobs[index] = later
                followed[index] = later
        if followed:
            again = self._backend.statuses([job.record for job in followed.values()])
            found |= {index: (job, again[job.job_id]) for index, job in followed.items()}
        return found

    def _observe(self) -> None:
        """One backend call for every unsettled child; settle what is done."""
        pending = self._state.unsettled_jobs()
        if not pending:
            return
        latest = self._latest_states(pending)
        collected = self._collected_once()
        for index, (job, seen) in latest.items():
            if seen.next_attempt is not None:
                continue  # a still later attempt runs: the next look follows it
            state = child_state(job, seen, collected)
            with self._state.lock:
                self._state.states[index] = state
            decision = self._state.decide(job, state)
            if decision in (Decision.SUCCEEDED, Decision.FAILED):
                settled = self._state.settle(index, job, state)
                if settled and decision is Decision.FAILED and not is_cleaned_up(state):
                    self._policy.on_failure()

    def _collected_once(self) -> Callable[[], dict[int, object]]:
        """The inputs whose outcome, or failure, a collection kept before cleaning up, read at
        most once per look, and only if needed."""
        records = self._records

        def kept() -> dict[int, object]:
            return {**records.collected_failures(), **records.collected()}

        return functools.cache(kept)

    def states(self) -> list[tuple[int, JobState]]:
        """``(index, state)`` of every submitted child, with the reason for its status.

        A child whose result was already collected and its records cleaned up (by
        ``results(cleanup=True)``) is NOT_FOUND with the reason ``collected and cleaned up``:
        it did not fail. Unsubmitted slots are skipped.
        """
        jobs = {i: job for i, job in enumerate(self.jobs) if job is not None}
        if not jobs:
            return []
        latest = self._latest_states(jobs)
        collected = self._collected_once()
        return [(i, child_state(job, state, collected)) for i, (job, state) in latest.items()]

    def statuses(self) -> list[tuple[int, JobStatus]]:
        """``(index, status)`` of every submitted child; unsubmitted slots are skipped.

        :meth:`states` gives the reasons too, e.g. which NOT_FOUND children were collected and
        cleaned up.
        """
        return [(i, state.status) for i, state in self.states()]

    def status_counts(self) -> dict[str, int]:
        """How many children are in each status, keyed by ``JobStatus`` value, e.g.
        ``{"RUNNING": 2, "SUCCEEDED": 1}``.

        Children collected and cleaned up count as ``"NOT_FOUND"``, like any child whose
        resource is gone; :meth:`states` tells them apart (reason ``collected and cleaned up``).
        """
        return dict(collections.Counter(state.status.value for _, state in self.states()))

    def child_failures(self) -> dict[int, AttemptFailure]:
        """Why each child (by input index) whose latest attempt ended without a value did:
        FAILED children, children the batch cancelled, and collected failures whose records
        were cleaned up (their kept outcome says). See ``JobHandle.failure()``."""
        from kinetic.batch.causes import child_failures

        return child_failures(self.jobs, self.states(), self._records)

    def cause_counts(self) -> dict[str, int]:
        """How many children ended without a value, by cause, e.g. ``{"user": 2, "oom": 1}``;
        the companion of :meth:`status_counts` (causes are ``kinetic.FailureCause`` values)."""
        failures = self.child_failures().values()
        return dict(collections.Counter(failure.cause.value for failure in failures))

    def _settled_stream(
        self,
        timeout: float | None,
        poll_interval: float,
        on_idle: Callable[[], None] = lambda: None,
    ) -> Iterator[int]:
        """Indices in the order their children settle; ends when the batch has. ``on_idle``
        runs whenever it is about to wait for more."""
        deadline = Deadline(timeout)
        low, high = self._backend.poll_bounds
        backoff = Backoff(min(low, poll_interval), min(high, poll_interval))
        seen = 0
        poll_cost = 0.0
        while True:
            if not self._state.submitter_retries:
                began = time.monotonic()
                self._observe()
                poll_cost = time.monotonic() - began
            with self._state.lock:
                fresh = self._state.settle_order[seen:]
                seen += len(fresh)
            if fresh:
                backoff.reset()
                yield from fresh
                continue
            if self._state.all_settled():
                return
            on_idle()
            if deadline.expired:
                raise TimeoutError(
                    f"Batch {self.group_id} is not done after {timeout:g}s "
                    f"({self.status_counts()}); its jobs keep running. Call batch.cancel() "
                    "to stop them."
                )
            # Never spend more than about half the time polling, however many children.
            delay = max(backoff.next_delay, poll_cost)
            remaining = deadline.remaining()
            delay = delay if remaining is None else min(delay, remaining)
            self._state.wait_for_change(delay)
            backoff.advance()

    def wait(self, *, timeout: float | None = None) -> None:
        """Block until every child is terminal (after its last retry)."""
        with self._ctrl_c_leaves_it_running():
            for _ in self._settled_stream(timeout, poll_interval=5.0):
                pass

    @contextlib.contextmanager
    def _ctrl_c_leaves_it_running(self) -> Iterator[None]:
        """On Ctrl-C: this process's submitter stops at once (without waiting for the
        interpreter's exit to notice), the running children go on, and the user is told how
        to reattach; the ``KeyboardInterrupt`` goes on."""
        try:
            yield
        except KeyboardInterrupt:
            self._state.interrupted.set()
            self._state.notify()
            with self._state.lock:
                submitted = sum(1 for job in self._state.jobs if job is not None)
            say_batch_left_running(
                self.group_id, self._manifest.job_template.backend, submitted, self._state.total
            )
            raise

    def as_completed(
        self, *, poll_interval: float = 5.0, timeout: float | None = None
    ) -> Iterator[JobHandle]:
        """Yield each child's handle as it finishes, while submission may still be going on.

        ``poll_interval`` caps the wait between polls; polling is faster while children change.
        """
        with self._ctrl_c_leaves_it_running():  # while it waits, not in the caller's loop
            for index in self._settled_stream(timeout, poll_interval):
                job = self._state.jobs[index]
                if job is not None:
                    yield job

    # -- collection ------------------------------------------------------------------------

    def _clean_child(self, job: JobHandle) -> None:
        """Clean up a collected child and its input's earlier attempts, which were kept (for
        their logs) only until the input's outcome was collected."""
        index = job.group_index
        earlier = [] if index is None else list(range(job.record.attempt))
        attempts = [self._attempt(index, a) for a in earlier if index is not None] + [job]
        for attempt in attempts:
            try:
                attempt.cleanup(cleanup_timeout=60, cleanup_poll_interval=0.5)
            except Exception:
                log.warning(
                    "could not clean up a collected child", job_id=attempt.job_id, exc_info=True
                )

    def _attempt(self, index: int, attempt: int) -> JobHandle:
        return JobHandle.from_record(self._manifest.child_record(index, attempt))

    def results(
        self,
        *,
        timeout: float | None = None,
        ordered: bool = True,
        cleanup: bool = True,
        return_exceptions: bool = False,
    ) -> list[Any]:
        """Every child's result, in input order (or completion order with ``ordered=False``).

        Raises :class:`BatchError` if any child failed, unless ``return_exceptions``, which puts
        the exception at the failed positions. A ``TimeoutError`` leaves the jobs running.

        With ``cleanup`` (the default) each child, succeeded or failed, has its backend resource
        and stored artifacts deleted once its outcome is read and kept with the batch (so a
        second collection, from any process, returns the same outcomes); failed children's logs
        go with them. ``cleanup=False`` keeps everything.
        """
        timeout = check_timeout(timeout)  # here, not in a stream that may start later
        with self._ctrl_c_leaves_it_running():
            return self._collector.results(
                lambda on_idle: self._settled_stream(timeout, poll_interval=5.0, on_idle=on_idle),
                ordered=ordered,
                cleanup=cleanup,
                return_exceptions=return_exceptions,
                clean_child=self._clean_child,
            )

    def failures(self) -> list[JobHandle]:
        """Children whose status is FAILED, and failed children that a ``results()`` collected
        and cleaned up (the batch kept why each failed and its last lines, so their
        ``failure()`` and ``tail()`` still answer). Other NOT_FOUND children are left out: a
        child cleaned up after it succeeded is no failure.

        After ``results()`` in this process, the failures it saw.
        """
        if self._collector.failures is not None:
            return list(self._collector.failures)
        jobs = self.jobs
        states = self.states()
        kept = None
        if any(is_cleaned_up(state) for _, state in states):
            kept = self._records.collected_failures()
        return [
            job
            for i, state in states
            if (job := jobs[i]) is not None
            and (
                state.status is JobStatus.FAILED
                or (
                    kept is not None
                    and is_cleaned_up(state)
                    and (said := kept.get(i)) is not None
                    and said.job_id == job.job_id
                )
            )
        ]

    # -- resume ----------------------------------------------------------------------------

    def submission_status(self) -> SubmitterStatus:
        """Whether this batch is being submitted, finished submitting, or lost its submitter
        (a dead process: no heartbeat for ``KINETIC_BATCH_LEASE`` seconds)."""
        return submitter_status(self._records, self._records.completion())

    def resume(self) -> str:
        """Finish submitting this batch after its submitter died, from this process; returns
        what it did, in words (also logged).

        Submits the inputs never submitted, creates children whose record was written but whose
        backend resource never appeared, and retries failed children within the batch's
        ``retries``; children still running are watched, and none runs twice. Takes over the
        batch's lease: a ``SubmitterAliveError`` if its submitter is still alive (or another
        process resumed it first). A batch that finished submitting, or was cancelled, is left
        as it is.
        """
        said = self._resume()
        log.info(said)
        return said

    def wait_submitted(self, timeout: float | None = None) -> None:
        """Block until this process's submitter (after ``run_async_map`` or ``resume``) is
        done; at once if this process submits nothing. ``TimeoutError`` leaves it submitting."""
        timeout = check_timeout(timeout)
        submitter = self._state.submitter
        if submitter is None:
            return
        submitter.join(timeout)
        if submitter.is_alive():
            raise TimeoutError(
                f"Batch {self.group_id} is still being submitted after {timeout:g}s."
            )

    def _resume(self) -> str:
        if self._state.submitter is not None and self._state.submitter.is_alive():
            return f"Batch {self.group_id} is being submitted by this process already."
        completion = self._records.completion()
        if self._manifest.array_job:
            return self._resume_array(completion is not None)
        if completion is not None and not stopped_on_its_own_error(completion):
            return (
                f"Batch {self.group_id} finished submitting at {completion.finished_at} "
                f"({completion.submitted} of {self._state.total} inputs); nothing to resume."
            )
        if self._records.cancel_requested():
            return f"Batch {self.group_id} was cancelled; nothing to resume."
        env = self._recaptured_env()  # read before the lease: a failed read takes nothing over
        lease = LeaseHolder.take_over(self._records, holder_finished=completion is not None)
        if completion is not None:
            # From here on readers follow this process's lease, not the old error.
            self._records.store.delete(layout.completion_key(self.group_id))
        plan = plan_resume(self._manifest, self._records, self._backend)
        self._state.detached.set()  # an attached handle stops following the dead submitter
        state = BatchState(
            total=self._state.total,
            retries=self._manifest.retries,
            jobs=plan.jobs,
            retry_on=retry_causes(self._manifest.retry_on),
        )
        state.submission_errors.update(self._state.submission_errors)
        policy = FailurePolicy(
            state,
            fail_fast=self._manifest.fail_fast,
            cancel_running=self._manifest.cancel_running_on_fail,
        )
        if plan.failed:
            policy.on_failure()  # a failure before the resume trips fail-fast as it would have
        self._state, self._policy = state, policy
        self._collector = Collector(self.group_id, state, self._records)
        policy.cancel_siblings = self._cancel_running
        self._in_parallel(
            lambda job: job.delete_resource(timeout=60, poll_interval=0.5), plan.retired
        )
        submitter = Submitter(
            state=state, backend=self._backend, manifest=self._manifest, records=self._records,
            policy=policy, lease=lease, queue=plan.queue, active=plan.active,
            env=env,
        )  # fmt: skip
        submitter.start_background()
        return f"Resumed batch {self.group_id}: {plan.describe(self._state.total)}."

    def _resume_array(self, complete: bool) -> str:
        """An array batch is complete once its object exists: there is nothing to finish,
        unless its submitter died between storing the batch and creating the object."""
        if complete:
            return (
                f"Batch {self.group_id} is one array object ({self._manifest.array_job}) that "
                "its backend runs and retries itself; nothing to resume."
            )
        if self._records.cancel_requested():
            return f"Batch {self.group_id} was cancelled; nothing to resume."
        from kinetic.backends import array_backend_for
        from kinetic.batch.fanout import submit_array

        backend = array_backend_for(self._manifest.job_template)
        submit_array(backend, self._manifest, self._records, self._recaptured_env())
        return (
            f"Resumed batch {self.group_id}: created its array object "
            f"{self._manifest.array_job} (all {self._state.total} inputs), if it was missing."
        )

    def _recaptured_env(self) -> dict[str, str]:
        """The stored call names the variables the batch captured, never their values: a
        resumed submitter takes them from its own environment (warning about missing ones)."""
        key = layout.group_call_key(self.group_id)
        keyring = self._backend.signing_keys(create=False)
        data = self._records.store.read(key)
        call = open_json(keyring, "call", self.group_id, data, CallDescriptor, key=key)
        # A batch stored before names-only calls kept values in ``env``: its keys are the names
        # (the stored values are never used).
        names = call.env_names or sorted(call.env)
        return recapture_env(names, os.environ, owner=f"Batch {self.group_id}")

    # -- teardown --------------------------------------------------------------------------

    def _stop_submitting(self, *, wait: bool = True) -> None:
        """Stop submitting and retrying; with ``wait``, until in-flight submissions have landed
        (the submitter cancels the jobs they start)."""
        self._state.stopping.set()
        self._state.notify()
        submitter = self._state.submitter
        if wait and submitter is not None and submitter is not threading.current_thread():
            submitter.join()

    def _cancel_running(self) -> None:
        pending = self._state.unsettled_jobs()
        if not pending:
            return
        states = self._backend.statuses([job.record for job in pending.values()])
        running = [job for job in pending.values() if not states[job.job_id].status.is_terminal]
        reason = self._state.stop_reason() or "the batch stopped"
        self._in_parallel(lambda job: cancel_child(self._records, job, reason), running)

    def cancel(self) -> None:
        """Stop submitting and retrying, and cancel every child that has not finished.

        Stored artifacts are kept for debugging. A process still submitting this batch
        elsewhere (the one that called ``run_async_map``) stops within about a second.
        """
        self._records.request_cancel()
        with self._state.lock:
            self._state.stopped_because = "the batch was cancelled"
        if self._manifest.array_job:
            from kinetic.batch.cleanup import delete_array

            delete_array(self._manifest)  # every index that still runs stops with it
            return
        self._stop_submitting(wait=False)
        self._cancel_running()  # first what runs now, without waiting on slow submissions
        self._stop_submitting(wait=True)
        self._cancel_running()

    def cleanup(self, *, k8s: bool = True, gcs: bool = True) -> None:
        """Delete every child's backend resource (``k8s``) and stored artifacts plus the
        batch's own records (``gcs``); a batch cleaned with ``gcs`` cannot be reattached."""
        self._stop_submitting()
        delete_batch(self._manifest, self._records, k8s=k8s, gcs=gcs)

    @staticmethod
    def _in_parallel(action: Any, jobs: list[JobHandle]) -> None:
        in_parallel(action, jobs)
