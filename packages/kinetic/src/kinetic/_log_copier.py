"""Copies a job's output to this process's stdout while the caller waits for the job.

The backend's ``follow_logs`` stream ends by itself once the job is terminal and its output
has been read to the end (the local log files read to EOF, a pod's log stream closed by the
kubelet). Waiting for that end, rather than for the job's status, is what makes every line the
job printed appear, in order, before a blocking call returns.
"""

import sys
import threading
from collections.abc import Callable, Iterator

from kinetic import _log
from kinetic._context import backend_for
from kinetic._interrupted import say_job_left_running
from kinetic._waiting import QueueLine, StatusCallback, until_terminal
from kinetic_protocol import Backend, JobRecord, JobState, JobStatus

__all__ = ["LogCopier", "wait_for_result"]

log = _log.get_logger(__name__)

DRAIN_LIMIT_S = 300.0
"""How long :meth:`LogCopier.finish` waits for a terminal job's stream to end. The stream of
an ended job closes within moments; this bound only guards against a backend whose stream
never does."""


class LogCopier:
    """A daemon thread writing each line of the job's output to ``sys.stdout`` as it comes."""

    def __init__(self, backend: Backend, record: JobRecord) -> None:
        self._job_id = record.job_id
        self._stop = threading.Event()
        self._lines: Iterator[str] = backend.follow_logs(record)
        self._thread = threading.Thread(target=self._run, daemon=True, name="kinetic-logs")
        self._thread.start()

    def _run(self) -> None:
        try:
            for line in self._lines:
                if self._stop.is_set():
                    return
                sys.stdout.write(line)
                sys.stdout.flush()
        except Exception as error:  # the caller's result must not depend on its logs
            log.warning("log streaming stopped", job_id=self._job_id, error=str(error))

    def finish(self, limit: float = DRAIN_LIMIT_S) -> None:
        """Wait until the (terminal) job's stream has been copied to its end."""
        self._thread.join(timeout=limit)
        if self._thread.is_alive():
            self._stop.set()
            log.warning(
                "the job's output stream did not end; stopped copying it",
                job_id=self._job_id,
                hint=f"kinetic jobs logs {self._job_id}",
            )

    def abandon(self) -> None:
        """Stop copying at once: the caller stops waiting while the job goes on."""
        self._stop.set()


def wait_for_result(
    record: JobRecord,
    timeout: float | None,
    on_status_change: Callable[[JobStatus], None] | None,
    stream_logs: bool,
) -> JobState:
    """``JobHandle.result``'s wait until the job of ``record`` is terminal. With
    ``stream_logs`` (a blocking call) it copies the job's output here meanwhile, to its last
    line, and says where the job waits in a queue. Ctrl-C says how to find the job again; the
    job goes on running, as it does after a timeout."""
    backend = backend_for(record)
    copier = None
    try:
        if stream_logs:
            copier = LogCopier(backend, record)
        queue_line = QueueLine(record.job_id) if stream_logs else None
        notify = StatusCallback(on_status_change, record.job_id)
        state = until_terminal(backend, record, timeout, notify, queue_line)
    except BaseException as stopped:  # Ctrl-C or a timeout: the job goes on, its copier stops
        if copier is not None:
            copier.abandon()
        if isinstance(stopped, KeyboardInterrupt):
            say_job_left_running(record.job_id, record.backend)
        raise
    if copier is not None:
        copier.finish()  # every line the job printed is out before its value is back
    return state
