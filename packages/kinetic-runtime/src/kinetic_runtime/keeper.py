"""Keep a run's output in the store, so it outlives the pod or directory that ran it.

Once the runtime knows it will run the job, it forks (:func:`keep_output`). The child runs the
job with its stdout and stderr going into a pipe; the parent, the keeper, copies every byte on
to where its own output goes (the pod's log, the local job's file), so live logs are unchanged,
and keeps the last ``KEEP_BYTES`` of it in the store (:class:`~kinetic_protocol.KeptOutput`),
rewritten at most every ``SYNC_SECONDS`` while output comes, and once more when the run ends.

Why a parent process rather than a thread of the job's own: a job killed for its memory (the
kernel picks the biggest process), stuck in native code that holds the GIL, or ended by
``os._exit`` takes its threads with it, but not its parent, which still writes the last lines
and how the run ended. The keeper forwards SIGTERM, SIGINT and SIGHUP to the job, and ends as
the job did (the same exit status, or the same signal), so whatever watches the process (the
kubelet, the local supervisor) sees the job's own ending.

One exception: a pod told to stop (SIGTERM: past its ``activeDeadlineSeconds``, or deleted)
is killed by the kubelet once its grace period is over, and a run that ignored the SIGTERM
would end with 137, the exit status of an out-of-memory kill, which a Job's retry rules take
for one (an array batch's ``retry_on``). With ``KINETIC_STOP_GRACE`` set (a pod's backend sets
it a little under the grace period), the keeper kills a run still going that long after the
SIGTERM and ends as stopped by it (143), before the kubelet would.
"""

import contextlib
import os
import select
import signal
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import NoReturn

from kinetic_protocol import KeptOutput, ObjectStore, layout
from kinetic_protocol.output import KEEP_BYTES, SYNC_SECONDS
from kinetic_protocol.records import encode_json
from kinetic_protocol.settings import SettingSpec
from kinetic_runtime import settings

__all__ = ["OutputKeeper", "OutputTail", "keep_output"]

_READ_SIZE = 65536
_FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


class OutputTail:
    """The last ``limit`` bytes of a stream, cut at a line start so the kept text begins with a
    whole line (unless a single line is longer than the bound)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.dropped = 0
        self._kept = bytearray()

    def add(self, data: bytes) -> None:
        self._kept += data
        excess = len(self._kept) - self.limit
        if excess <= 0:
            return
        newline = self._kept.find(b"\n", excess)
        cut = newline + 1 if 0 <= newline < len(self._kept) - 1 else excess
        del self._kept[:cut]
        self.dropped += cut

    def text(self) -> str:
        return self._kept.decode(errors="replace")


class OutputKeeper:
    """One host's output of one run, kept in ``store``: :meth:`add` what comes, :meth:`sync`
    when :meth:`due`, and ``sync(final=True)`` at the end. A write that fails is said once on
    the run's own output and retried at the next sync: keeping output never fails a job."""

    def __init__(
        self,
        store: ObjectStore,
        job_id: str,
        host: int,
        *,
        limit: int = KEEP_BYTES,
        interval: float = SYNC_SECONDS,
        run: str | None = None,
        say: Callable[[str], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.store, self.job_id, self.host = store, job_id, host
        self.run = run or f"{datetime.now(UTC):%Y%m%dT%H%M%S%f}-{os.getpid()}"
        self.key = layout.kept_output_key(job_id, host, self.run)
        self.tail = OutputTail(limit)
        self.interval = interval
        self.writes = 0
        self._say = say
        self._clock = clock
        self._dirty = False
        self._last_sync: float | None = None
        self._warned = False

    def add(self, data: bytes) -> None:
        self.tail.add(data)
        self._dirty = True

    def wait_time(self) -> float | None:
        """Seconds until output that came should be written; None when nothing is waiting."""
        if not self._dirty:
            return None
        if self._last_sync is None:
            return 0.0
        return max(0.0, self._last_sync + self.interval - self._clock())

    def due(self) -> bool:
        wait = self.wait_time()
        return wait is not None and wait <= 0

    def sync(self, *, final: bool = False, ended: str = "") -> None:
        kept = KeptOutput(
            job_id=self.job_id,
            host=self.host,
            run=self.run,
            text=self.tail.text(),
            dropped=self.tail.dropped,
            final=final,
            ended=ended,
            updated_at=_now(),
            writes=self.writes + 1,
        )
        self._last_sync = self._clock()
        try:
            self.store.write(self.key, encode_json(kept))
        except Exception as exc:
            if not self._warned and self._say is not None:
                self._warned = True
                self._say(f"could not keep this run's output in the store ({exc!r}); retrying")
            return
        self.writes += 1
        self._dirty = False


def _setting(spec: SettingSpec, default: float, say: Callable[[str], None]) -> float:
    value = _number(spec, say, instead=f"using {default:g}")
    return default if value is None else value


def _number(
    spec: SettingSpec, say: Callable[[str], None], *, instead: str = "ignoring it"
) -> float | None:
    """``spec``'s value, a number of 0 or more; None when it is unset or is not one (said)."""
    raw = spec.from_env()
    if not raw:
        return None
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not 0 <= value < float("inf"):  # NaN fails both comparisons
        say(f"{spec.env}={raw!r} is not a number of 0 or more; {instead}")
        return None
    return value


def keep_output(store_uri: str, job_id: str, host: int, say: Callable[[str], None]) -> None:
    """Fork: return in the child, which runs the job with its output piped to the parent; the
    parent keeps that output (see the module) and exits as the child did. Returns at once, with
    no fork, when output is not kept (``KINETIC_KEEP_OUTPUT_BYTES=0``)."""
    limit = int(_setting(settings.KEEP_OUTPUT_BYTES, KEEP_BYTES, say))
    interval = _setting(settings.KEEP_OUTPUT_SECONDS, SYNC_SECONDS, say)
    if limit == 0:
        return
    read_end, write_end = os.pipe()
    sys.stdout.flush()
    sys.stderr.flush()
    keeper = os.getpid()
    child = os.fork()
    if child == 0:
        os.close(read_end)
        os.dup2(write_end, 1)
        os.dup2(write_end, 2)
        os.close(write_end)
        from kinetic_runtime.local.processes import die_with_parent

        die_with_parent(keeper)
        return
    os.close(write_end)
    _keep(child, read_end, store_uri, job_id, host, limit, interval)


class _Stop:
    """When the keeper was told to stop (SIGTERM), and whether it killed the run after
    ``grace`` seconds (None: it never does)."""

    def __init__(self, grace: float | None) -> None:
        self.grace = grace
        self.asked_at: float | None = None
        self.killed = False

    def ask(self) -> None:
        if self.asked_at is None:
            self.asked_at = time.monotonic()

    def remaining(self) -> float | None:
        """Seconds until the run is to be killed; None while no kill is due."""
        if self.grace is None or self.asked_at is None or self.killed:
            return None
        return max(0.0, self.asked_at + self.grace - time.monotonic())

    def enforce(self, child: int, say: Callable[[str], None]) -> None:
        if self.remaining() == 0.0:
            self.killed = True
            say(f"still running {self.grace:g}s after SIGTERM; ending it")
            with contextlib.suppress(ProcessLookupError):
                os.kill(child, signal.SIGKILL)


def _keep(
    child: int, pipe: int, store_uri: str, job_id: str, host: int, limit: int, interval: float
) -> NoReturn:
    """The keeper's life: copy and keep the child's output until it ends, then end like it."""

    def say(message: str) -> None:
        _copy(f"[kinetic] job {job_id}: {message}\n".encode())

    stop = _Stop(_number(settings.STOP_GRACE, say))

    def forward(signum: int, _frame: object) -> None:
        if signum == signal.SIGTERM:
            stop.ask()
        with contextlib.suppress(ProcessLookupError):
            os.kill(child, signum)

    for signum in _FORWARDED:
        signal.signal(signum, forward)

    status: int | None = None
    try:
        from kinetic_runtime.stores import open_store

        keeper = OutputKeeper(
            open_store(store_uri), job_id, host, limit=limit, interval=interval, say=say
        )
        status = _pump(child, pipe, keeper, lambda: stop.enforce(child, say), stop.remaining)
        keeper.sync(final=True, ended=_describe(status))
    except Exception as exc:  # never leave the job unwatched: copy on, wait, end as it did
        say(f"stopped keeping this run's output in the store: {exc!r}")
        if status is None:
            status = _copy_until_exit(child, pipe)
    # A run this keeper killed after the stop grace ends as stopped by the SIGTERM it was
    # sent (a wait status whose low bits are a signal number is a death by that signal).
    _end_like(signal.SIGTERM if stop.killed else status)


def _pump(
    child: int,
    pipe: int,
    keeper: OutputKeeper,
    enforce: Callable[[], None] = lambda: None,
    due: Callable[[], float | None] = lambda: None,
) -> int:
    """Copy ``pipe`` to stdout and into ``keeper`` until the child has exited; its wait status.
    ``due``: seconds until ``enforce`` must run (a stopped run to be ended), if it must.

    Ends at the child's exit, not at the pipe's end: a process the job left running may hold
    the pipe open, and the run is over when the job's own process is."""
    pidfd = _pidfd(child)
    watched = [pipe] if pidfd is None else [pipe, pidfd]
    while True:
        wait = _soonest(keeper.wait_time(), due())
        if pidfd is None:  # no pidfd: look at the child at least twice a second
            wait = 0.5 if wait is None else min(wait, 0.5)
        ready, _, _ = select.select(watched, [], [], wait)
        if pipe in ready:
            data = os.read(pipe, _READ_SIZE)
            if data:
                _copy(data)
                keeper.add(data)
            else:
                watched.remove(pipe)
        done, status = os.waitpid(child, os.WNOHANG)
        if done:
            break
        enforce()
        if keeper.due():
            keeper.sync()
    if pidfd is not None:
        os.close(pidfd)
    if pipe in watched:  # what the job wrote last, still in the pipe
        for data in _available(pipe):
            _copy(data)
            keeper.add(data)
    return status


def _soonest(first: float | None, second: float | None) -> float | None:
    waits = [wait for wait in (first, second) if wait is not None]
    return min(waits) if waits else None


def _copy_until_exit(child: int, pipe: int) -> int:
    """Copy the job's output on, without keeping it, until the pipe ends; its wait status."""
    with contextlib.suppress(OSError):
        while data := os.read(pipe, _READ_SIZE):
            _copy(data)
    return os.waitpid(child, 0)[1]


def _pidfd(pid: int) -> int | None:
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):
        return None


def _available(pipe: int) -> list[bytes]:
    """What can be read from ``pipe`` now, without waiting for more."""
    os.set_blocking(pipe, False)
    chunks = []
    with contextlib.suppress(BlockingIOError):
        while data := os.read(pipe, _READ_SIZE):
            chunks.append(data)
    return chunks


def _copy(data: bytes) -> None:
    """Write ``data`` on to the keeper's own stdout (the pod's log, the local job's file)."""
    view = memoryview(data)
    with contextlib.suppress(OSError):
        while view:
            view = view[os.write(1, view) :]


def _describe(status: int) -> str:
    if os.WIFSIGNALED(status):
        return f"killed by {signal.Signals(os.WTERMSIG(status)).name}"
    return f"exit {os.waitstatus_to_exitcode(status)}"


def _end_like(status: int) -> NoReturn:
    """End with the child's exit status, or by its signal (where a process may signal itself:
    a container's first process may not, and exits 128 + the signal, as a shell would)."""
    if os.WIFSIGNALED(status):
        signum = os.WTERMSIG(status)
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)
        os._exit(128 + signum)
    os._exit(os.waitstatus_to_exitcode(status))
