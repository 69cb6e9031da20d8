"""One stream of output for a whole batch: every child's lines, each prefixed with its input.

A line of input 3 reads ``[3] ...``; of its first retry ``[3 r1] ...``; of host 1 of a
multi-host child ``[3 host 1] ...``. Following starts on each child as it starts running
(retries included) and ends once the batch has settled and every child's output is read.
"""

import queue
import re
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field

from kinetic import _log
from kinetic.batch.state import BatchState
from kinetic.batch.unverified import confirmed_listing
from kinetic.bookkeeping.records import BatchRecords
from kinetic.handle import JobHandle
from kinetic.kept_output import kept_text, read_output
from kinetic_protocol import (
    Backend,
    BatchManifest,
    ConfigError,
    Failed,
    HostSelection,
    JobState,
    JobStatus,
    KineticError,
    ObjectNotFoundError,
)
from kinetic_protocol.host_groups import record_hosts

__all__ = ["BatchLogs", "check_options", "log_lines", "prefix_lines", "print_or_join"]

log = _log.get_logger(__name__)
_HOST_PREFIX = re.compile(r"\[host (\d+)\] ")


def _label(job: JobHandle) -> str:
    attempt = job.record.attempt
    return f"{job.group_index}" + (f" r{attempt}" if attempt else "")


def prefix_lines(job: JobHandle, lines: Iterator[str] | list[str]) -> Iterator[str]:
    """``lines`` of ``job``'s output, each prefixed with its input (and host), ending in a
    newline."""
    label = _label(job)
    for line in lines:
        host = _HOST_PREFIX.match(line)
        text = line[host.end() :] if host else line
        where = f"{label} host {host[1]}" if host else label
        yield f"[{where}] {text}" + ("" if text.endswith("\n") else "\n")


def check_options(*, follow: bool, failed: bool, tail: int | None) -> None:
    """Refuse ``tail`` with ``follow`` (unless ``failed``): following prints every line."""
    if follow and tail is not None and not failed:
        raise ConfigError(
            f"tail={tail} cannot be combined with follow: following prints every line from "
            "each child's start. Drop the tail, or add failed=True (--failed) to print the "
            "last lines of each child as it fails."
        )
    if tail is not None and tail < 0:
        raise ConfigError(f"tail={tail} is negative; give a number of lines, 0 or more.")


def _stored_failure(job: JobHandle) -> Failed | None:
    try:
        envelope = job.read_envelope()
    except ObjectNotFoundError:
        return None
    return envelope if isinstance(envelope, Failed) else None


def _failure_line(failure: Failed) -> str:
    return f"failed: {failure.exc_type}: {failure.message}"


@dataclass
class BatchLogs:
    """Reads the output of one batch's children through its backend."""

    manifest: BatchManifest
    records: BatchRecords
    backend: Backend
    state: BatchState
    poll_interval: float = 1.0
    _followed: set[str] = field(default_factory=set)

    def _host(self, job: JobHandle) -> HostSelection:
        """``"all"`` where the backend keeps one log per host and the job has several."""
        multi = record_hosts(job.record) > 1
        return "all" if multi and self.backend.capabilities.per_host_logs else None

    def _follow_host(self, job: JobHandle) -> dict[str, HostSelection]:
        """``follow_logs``' options: ``host`` only where :meth:`_host` chose one."""
        host = self._host(job)
        return {} if host is None else {"host": host}

    def attempts(self) -> list[JobHandle]:
        """Every attempt of every submitted input, in input then attempt order."""
        listing = confirmed_listing(self.records, self.manifest, self.backend)
        return [
            JobHandle.from_record(self.manifest.child_record(index, attempt))
            for index in sorted(listing.latest_attempts)
            for attempt in range(listing.latest_attempts[index] + 1)
        ]

    def _failed(self, jobs: list[JobHandle], states: dict[str, JobState]) -> list[JobHandle]:
        """Attempts that failed: every retried one, those whose status is FAILED, and those
        gone (their resource deleted once a retry was decided) that stored a failure."""
        latest = {job.group_index: job.record.attempt for job in jobs}
        return [
            job
            for job in jobs
            if job.record.attempt < latest[job.group_index]
            or states[job.job_id].status is JobStatus.FAILED
            or (
                states[job.job_id].status is JobStatus.NOT_FOUND
                and _stored_failure(job) is not None
            )
        ]

    def _text(self, job: JobHandle, tail: int | None, *, failure: bool = False) -> Iterator[str]:
        """The attempt's output; for a ``failure``, then the error it stored (a retried
        attempt's resource, and on some backends its output, is gone by then)."""
        try:
            text = read_output(self.backend, job.record, tail=tail, host=self._host(job))
        except KineticError as error:
            text = f"(no logs: {error})\n"
        lines = text.splitlines(keepends=True)
        if failure:
            if not lines:
                lines.append("(no output kept for this attempt)")
            stored = _stored_failure(job)
            if stored is not None:
                lines.append(_failure_line(stored))
        return prefix_lines(job, lines)

    def snapshot(self, *, failed: bool = False, tail: int | None = None) -> Iterator[str]:
        """Every attempt's output so far (the last ``tail`` lines of each), child by child;
        with ``failed``, only the attempts that failed."""
        jobs = self.attempts()
        if failed:
            states = self.backend.statuses([job.record for job in jobs]) if jobs else {}
            jobs = self._failed(jobs, states)
        for job in jobs:
            yield from self._text(job, tail, failure=failed)

    def follow(self, *, failed: bool = False, tail: int | None = None) -> Iterator[str]:
        """Lines as children write them, from every child as it starts, until the batch has
        settled. With ``failed``, each failed attempt's output (its last ``tail`` lines) as
        soon as it fails, instead of everything live."""
        check_options(follow=True, failed=failed, tail=tail)
        lines: queue.Queue[object] = queue.Queue()
        followers: list[threading.Thread] = []
        while True:
            finished = self.state.submission_done.is_set() and not any(
                thread.is_alive() for thread in followers
            )
            jobs = [job for job in self.attempts() if job.job_id not in self._followed]
            states = self.backend.statuses([job.record for job in jobs]) if jobs else {}
            failures = self._failed(jobs, states) if failed else []
            for job in jobs:
                if self._not_created_yet(job, states[job.job_id]):
                    continue  # looked at again at the next poll
                status = states[job.job_id].status
                if failed:
                    if job in failures:
                        yield from self._text(job, tail, failure=True)
                    if job in failures or status.is_terminal:
                        self._followed.add(job.job_id)
                elif status is not JobStatus.PENDING:
                    self._followed.add(job.job_id)
                    followers.append(self._start_follower(job, lines))
            done = finished and not jobs
            yield from self._drain(lines, wait=0.0 if done else self.poll_interval)
            if done and lines.empty():
                return

    def _not_created_yet(self, job: JobHandle, state: JobState) -> bool:
        """Whether ``job`` is NOT_FOUND only because its submitter has written its record but
        not yet created its backend resource (the record comes first). Following it now would
        end at once, and its lines would never be followed. Once submission has ended, or the
        attempt stored an outcome, NOT_FOUND means gone."""
        if state.status is not JobStatus.NOT_FOUND or self.state.submission_done.is_set():
            return False
        try:
            job.read_envelope()
        except ObjectNotFoundError:
            return True
        except KineticError:
            return False
        return False

    def _start_follower(self, job: JobHandle, lines: "queue.Queue[object]") -> threading.Thread:
        def run() -> None:
            try:
                said = False
                for line in prefix_lines(
                    job,
                    self.backend.follow_logs(job.record, **self._follow_host(job)),
                ):
                    said = True
                    lines.put(line)
                if not said:  # gone before it could be followed: what it kept in the store
                    kept = kept_text(job.record, host=self._host(job)) or ""
                    for line in prefix_lines(job, kept.splitlines(keepends=True)):
                        lines.put(line)
                failure = _stored_failure(job)
                if failure is not None:  # said even where the backend kept no output
                    lines.put(next(prefix_lines(job, [_failure_line(failure)])))
            except KineticError as error:
                lines.put(next(prefix_lines(job, [f"(logs ended: {error})"])))
            except Exception:
                log.warning("could not follow a child's logs", job_id=job.job_id, exc_info=True)

        thread = threading.Thread(target=run, name=f"kinetic-logs-{job.job_id}", daemon=True)
        thread.start()
        return thread

    @staticmethod
    def _drain(lines: "queue.Queue[object]", wait: float) -> Iterator[str]:
        """What the followers have put so far; waits up to ``wait`` for the first line."""
        try:
            item = lines.get(timeout=wait) if wait > 0 else lines.get_nowait()
        except queue.Empty:
            return
        while True:
            if isinstance(item, str):
                yield item
            try:
                item = lines.get_nowait()
            except queue.Empty:
                return


def log_lines(
    manifest: BatchManifest,
    records: BatchRecords,
    backend: Backend,
    state: BatchState,
    *,
    follow: bool,
    failed: bool,
    tail: int | None,
) -> Iterator[str]:
    """The batch's output as one stream (``BatchHandle.log_lines``); the options are checked
    now, not when the stream is first read."""
    check_options(follow=follow, failed=failed, tail=tail)
    logs = BatchLogs(manifest, records, backend, state)
    if follow:
        return logs.follow(failed=failed, tail=tail)
    return logs.snapshot(failed=failed, tail=tail)


def print_or_join(lines: Iterator[str], *, follow: bool) -> str | None:
    """``BatchHandle.logs``: the lines as one text, or, when following, printed as they come."""
    if not follow:
        return "".join(lines)
    for line in lines:
        sys.stdout.write(line)
        sys.stdout.flush()
    return None
