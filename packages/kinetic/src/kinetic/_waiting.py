"""Adaptive waiting: poll fast while things change, back off while they do not; and what the
waiting caller is told meanwhile (its status callback, where its job stands in a queue)."""

import contextlib
import logging
import math
import time
from collections.abc import Callable, Iterator
from typing import Any

from kinetic import _log
from kinetic._seconds import as_seconds, shown_seconds
from kinetic_protocol import Backend, ConfigError, JobRecord, JobState, JobStatus

__all__ = [
    "Backoff",
    "Deadline",
    "PollPace",
    "QueueLine",
    "StatusCallback",
    "check_timeout",
    "until_terminal",
]


def check_timeout(seconds: float | None, *, what: str = "timeout") -> float | None:
    """``seconds`` if it is a usable timeout; ``None`` (no limit) for ``None`` or infinity.

    A NaN deadline never passes and a negative one makes no sense: both are refused here,
    before any waiting, rather than waiting for ever."""
    if seconds is None:
        return None
    value = as_seconds(seconds)
    if math.isinf(value) and value > 0:
        return None
    if math.isnan(value) or value < 0:
        raise ConfigError(
            f"{what}={shown_seconds(seconds)} is not a number of seconds >= 0: pass e.g. "
            f"{what}=60, or {what}=None to wait without limit."
        )
    return value


class Deadline:
    """A monotonic deadline; ``None`` seconds means never."""

    def __init__(self, seconds: float | None) -> None:
        seconds = check_timeout(seconds)
        self._end = None if seconds is None else time.monotonic() + seconds

    def remaining(self) -> float | None:
        return None if self._end is None else max(0.0, self._end - time.monotonic())

    @property
    def expired(self) -> bool:
        return self._end is not None and time.monotonic() >= self._end


class PollPace:
    """When a thread's next poll may start: after each poll, four times that poll's duration
    later, so that polling takes at most a fifth of the thread's time however many jobs a poll
    covers and however often one settles. On a laptop of two cores, a batch's client polling
    the local backend back to back spent half a core that its jobs' processes needed."""

    _SPACING = 4.0

    def __init__(self) -> None:
        self._next = 0.0

    def due(self) -> bool:
        return time.monotonic() >= self._next

    def wait(self) -> float:
        """Seconds until the next poll is due (0 when it is)."""
        return max(0.0, self._next - time.monotonic())

    @contextlib.contextmanager
    def polling(self) -> Iterator[None]:
        """Time one poll (one that raises too) and set when the next may start."""
        began = time.monotonic()
        try:
            yield
        finally:
            ended = time.monotonic()
            self._next = ended + (ended - began) * self._SPACING


class Backoff:
    """Sleeps that double from ``low`` to ``high``; ``reset()`` after observing a change."""

    def __init__(self, low: float, high: float) -> None:
        self.low, self.high = low, max(low, high)
        self._next = low

    def reset(self) -> None:
        self._next = self.low

    def sleep(self, deadline: Deadline | None = None) -> None:
        delay = self._next
        remaining = deadline.remaining() if deadline else None
        if remaining is not None:
            delay = min(delay, remaining)
        time.sleep(delay)
        self._next = min(self._next * 2, self.high)

    @property
    def next_delay(self) -> float:
        return self._next

    def advance(self) -> None:
        """Grow the next delay as if :meth:`sleep` had run (for callers that wait elsewhere)."""
        self._next = min(self._next * 2, self.high)


class StatusCallback:
    """The user's ``on_status_change`` for one wait: its exceptions are shown, never raised.

    A raising callback must not break the wait (the spec), and a user's exception must not
    vanish either: the first one is logged by the ``kinetic`` logger at WARNING with its
    traceback, which reaches stderr when the application configured no logging. Later ones of
    the same wait are counted, not repeated, so a callback that fails on every change does not
    flood the terminal.
    """

    def __init__(self, callback: Callable[[Any], object] | None, job_id: str) -> None:
        self._callback = callback
        self._job_id = job_id
        self.failures = 0

    def __call__(self, status: Any) -> None:
        if self._callback is None:
            return
        try:
            self._callback(status)
        except Exception:
            self.failures += 1
            if self.failures == 1:
                logging.getLogger("kinetic").warning(
                    "kinetic: the on_status_change callback raised while waiting for job %s "
                    "(status %s); waiting goes on, and later errors of this callback in this "
                    "wait are not shown:",
                    self._job_id,
                    getattr(status, "value", status),
                    exc_info=True,
                )


class QueueLine:
    """One line each time a waiting job's place in its queue changes (``Job ...: queued in
    team-a: 3rd of 7``), for a call that blocks on it: the first place seen, then each new
    position. Nothing while the job is not queued; a job that leaves its queue and is queued
    again (preempted) is told about afresh."""

    def __init__(self, job_id: str) -> None:
        self._job_id = job_id
        self._shown: tuple[str, str, int | None] | None = None

    def __call__(self, state: JobState) -> None:
        place = state.queue if state.status is JobStatus.PENDING else None
        seen = None if place is None else (place.queue, place.cluster_queue, place.position)
        if seen == self._shown:
            return
        self._shown = seen
        if place is not None:
            _log.say(f"Job {self._job_id}: {place.describe()}")


def until_terminal(
    backend: Backend,
    record: JobRecord,
    timeout: float | None,
    notify: StatusCallback,
    on_state: Callable[[JobState], None] | None = None,
) -> JobState:
    """Poll ``record``'s job until it is terminal (``TimeoutError`` past ``timeout``, which
    leaves it running): ``notify`` gets each new status, ``on_state`` every state polled."""
    deadline = Deadline(timeout)
    backoff = Backoff(*backend.poll_bounds)
    last: JobStatus | None = None
    while True:
        state = backend.statuses([record])[record.job_id]
        if on_state is not None:
            on_state(state)
        if state.status is not last:
            last = state.status
            backoff.reset()
            notify(state.status)
        if state.status.is_terminal:
            return state
        if deadline.expired:
            raise TimeoutError(
                f"Job {record.job_id} is still {state.status.value} after {timeout:g}s; it "
                "keeps running. Call result() again, tail(), or cancel()."
            )
        backoff.sleep(deadline)
