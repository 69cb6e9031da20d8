"""``BatchHandle``: observe, collect, cancel and clean up a batch as one thing."""

import collections
import contextlib
import dataclasses
import functools
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from kinetic import _log
from kinetic._interrupted import say_batch_left_running
from kinetic._waiting import Backoff, Deadline, PollPace, check_timeout
from kinetic.batch import logs as batch_logs
from kinetic.batch.array import array_of
from kinetic.batch.causes import child_failures, failed_children
from kinetic.batch.cleanup import clean_collected_child, delete_batch, in_parallel
from kinetic.batch.collect import Collector
from kinetic.batch.lease import SubmitterStatus, submitter_status
from kinetic.batch.observe import collected_once, latest_states, observe
from kinetic.batch.resume import recaptured_env, resume_children
from kinetic.batch.state import BatchState, child_state
from kinetic.batch.submitter import FailurePolicy
from kinetic.bookkeeping.kept import cancel_child
from kinetic.bookkeeping.records import BatchRecords
from kinetic.handle import JobHandle
from kinetic_protocol import (
    AttemptFailure,
    Backend,
    BatchManifest,
    ConfigError,
    JobState,
    JobStatus,
)

if TYPE_CHECKING:
    from kinetic.batch.tally import Tally
    from kinetic.batch.timeline import BatchTimeline
    from kinetic.usage import Usage

__all__ = ["BatchHandle"]

log = _log.get_logger(__name__)


def _live_jobs(self: "BatchHandle") -> list[JobHandle | None]:
    with self._state.lock:
        return list(self._state.jobs)


@dataclasses.dataclass(init=False, repr=False, eq=False)
class BatchHandle:
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
        self._backend = backend
        self._records = records
        self._array = array_of(manifest)
        self._adopt(state, policy)

    def _adopt(self, state: BatchState, policy: FailurePolicy) -> None:
        """Follow ``state`` under ``policy`` from now on (a resume replaces both)."""
        self._state, self._policy = state, policy
        self._collector = Collector(self.group_id, state, self._records)
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

    def states(self) -> list[tuple[int, JobState]]:
        """``(index, state)`` of every submitted child, with the reason for its status.

        A child whose result was already collected and its records cleaned up (by
        ``results(cleanup=True)``) is NOT_FOUND with the reason ``collected and cleaned up``:
        it did not fail. Unsubmitted slots are skipped.
        """
        records = self._state.jobs.records()
        if not records:
            return []
        latest = latest_states(self._manifest, self._backend, self._state, records)
        collected = collected_once(self._records)
        return [(i, child_state(record, state, collected)) for i, (record, state) in latest.items()]

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
        return child_failures(self.jobs, self.states(), self._records)

    def _failures_among(self, states: Sequence[tuple[int, JobState]]) -> dict[int, AttemptFailure]:
        """:meth:`child_failures` for these children (``(index, state)``) only."""
        return child_failures(self.jobs, states, self._records)

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
        pace = PollPace()  # also after a poll that settled children
        while True:
            if not self._state.submitter_retries and pace.due():
                with pace.polling():
                    observe(self._manifest, self._backend, self._records, self._state, self._policy)
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
            delay = max(backoff.next_delay, pace.wait())
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
                submitted = self._state.jobs.submitted()
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
                clean_child=functools.partial(clean_collected_child, self._manifest),
            )

    def failures(self) -> list[JobHandle]:
        """Children whose status is FAILED, and failed children that a ``results()`` collected
        and cleaned up (the batch kept why each failed and its last lines, so their
        ``failure()`` and ``tail()`` still answer; one whose kept summary is gone or does not
        verify is still listed when its kept outcome is an error). Other NOT_FOUND children
        are left out: a child cleaned up after it succeeded is no failure.

        After ``results()`` in this process, the failures it saw.
        """
        if self._collector.failures is not None:
            return list(self._collector.failures)
        return failed_children(self.jobs, self.states(), self._records)

    # -- resume ----------------------------------------------------------------------------

    def submission_status(self) -> SubmitterStatus:
        """Whether this batch is being submitted, finished submitting, or lost its submitter
        (a dead process: no heartbeat for ``KINETIC_BATCH_LEASE`` seconds)."""
        return submitter_status(self._records, self._records.completion())

    def resume(self, *, max_cost: float | None = None) -> str:
        """Finish submitting this batch after its submitter died, from this process; returns
        what it did, in words (also logged). ``max_cost`` raises the cap of a batch that its
        ``max_cost`` stopped (None keeps the batch's), for this submission.

        Submits the inputs never submitted, creates children whose record was written but whose
        backend resource never appeared, and retries failed children within the batch's
        ``retries``; children still running are watched, and none runs twice. Takes over the
        batch's lease: a ``SubmitterAliveError`` if its submitter is still alive (or another
        process resumed it first). A batch that finished submitting, or was cancelled, is left
        as it is.
        """
        from kinetic.options import checked_max_cost

        said = self._resume(checked_max_cost(max_cost))
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

    def _resume(self, max_cost: float | None = None) -> str:
        if self._state.submitter is not None and self._state.submitter.is_alive():
            return f"Batch {self.group_id} is being submitted by this process already."
        completion = self._records.completion()
        if self._array is not None:
            if max_cost is not None:
                raise ConfigError(
                    f"Batch {self.group_id} is one array its backend holds whole, so no cap "
                    "stops its inputs: max_cost applies to batches submitted input by input."
                )
            env = functools.partial(recaptured_env, self.group_id, self._records, self._backend)
            return self._array.resume(self._records, complete=completion is not None, env=env)
        return resume_children(
            self._manifest,
            self._records,
            self._backend,
            self._state,
            completion,
            self._adopt,
            max_cost=max_cost,
        )

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
        in_parallel(lambda job: cancel_child(self._records, job.record, reason), running)

    def cancel(self) -> None:
        """Stop submitting and retrying, and cancel every child that has not finished.

        Stored artifacts are kept for debugging. A process still submitting this batch
        elsewhere (the one that called ``run_async_map``) stops within about a second.
        """
        self._records.request_cancel()
        with self._state.lock:
            self._state.stopped_because = "the batch was cancelled"
        if self._array is not None:
            self._array.delete()  # every index that still runs stops with it
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

    # -- views: how the batch looks to a person ------------------------------------------

    def timeline(self) -> "BatchTimeline":
        """Every attempt of every input as time spans (submitted, started, finished), with
        submission failures; ``.figure()`` draws it, ``.write("t.html")`` saves it (both
        need ``kinetic[plot]``). Read from the store, so it works on an attached batch too."""
        from kinetic.batch.timeline import read_timeline

        return read_timeline(self._manifest, self._records, self._backend)

    @property
    def billed(self) -> bool:
        """Whether its jobs run on accelerators their backend provisions, and so cost (not on
        ``local``, nor on ``cpu``)."""
        from kinetic.usage import billed

        return billed(self._manifest.job_template)

    def usage(self) -> "Usage | None":
        """Accelerator time every attempt used so far (running ones until now) and its list
        cost (``kinetic accelerators`` shows the prices); None where the batch runs on no
        billed accelerator (``local``, ``cpu``). Reads what :meth:`timeline` reads."""
        return self.timeline().summary().usage if self.billed else None

    def log_lines(
        self, *, follow: bool = False, failed: bool = False, tail: int | None = None
    ) -> Iterator[str]:
        """Every child's output as one stream of lines, each prefixed ``[index]`` (``[index
        rN]`` for retry N, ``[index host H]`` per host of a multi-host child).

        Without ``follow``: what every attempt wrote so far, child by child (the last ``tail``
        lines of each). With ``follow``: lines as they are written, from each child as it
        starts, until the batch has settled. ``failed``: only attempts that failed (with
        ``follow``, each one's output as soon as it fails).
        """
        parts = (self._manifest, self._records, self._backend, self._state)
        return batch_logs.log_lines(*parts, follow=follow, failed=failed, tail=tail)

    def logs(
        self, follow: bool = False, *, failed: bool = False, tail: int | None = None
    ) -> str | None:
        """The batch's output as one text (see :meth:`log_lines`); with ``follow``, print it
        as it comes until the batch has settled instead."""
        lines = self.log_lines(follow=follow, failed=failed, tail=tail)
        return batch_logs.print_or_join(lines, follow=follow)

    def watch(self, *, interval: float = 1.0, timeout: float | None = None) -> "Tally":
        """Show live progress until every input has settled; returns the final counts.

        A progress bar on a terminal, one line per change in a log, and an HTML summary
        updated in place in a Jupyter notebook. ``TimeoutError`` after ``timeout`` seconds
        leaves the jobs running.
        """
        from kinetic.batch.watch import watch

        return watch(self, interval=interval, timeout=timeout)

    def _repr_html_(self) -> str:
        """Jupyter's view: id, counts with a progress bar, and the CLI commands to follow it."""
        from kinetic.batch.notebook import batch_html

        return batch_html(self)
