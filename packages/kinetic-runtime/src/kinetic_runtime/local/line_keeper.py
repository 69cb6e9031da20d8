"""One process per line that starts waiting jobs when nobody else will.

A slot is freed by the supervisor of the job that ends, which wakes the keeper (a byte into the
line's ``keeper.wake`` FIFO) to start the next job. The keeper, not the supervisor, forks the
next supervisor: a process forked from a thread keeps its parent's other stacks as memory it
never frees, so a line of supervisors each forking the next grew by every one before it (150
MiB each, tens of thousands of jobs into a line). A supervisor finding no keeper (killed)
dispatches itself. A supervisor killed with ``kill -9`` frees its slot without waking anyone:
the keeper, which runs while jobs wait, notices the free slot within ``POLL_SECONDS`` and
dispatches. Without a launcher it starts every job, since
a client never dispatches (``kinetic.local.line``). Any client that submits a job, or reads the
state of one that waits, starts a keeper when none holds the line's keeper lock, so a keeper
killed too is replaced by the next that looks. The client takes that lock before it starts the
keeper, which inherits it: a thousand submissions in the moment a keeper takes to start start
one keeper, not a thousand.

    python -m kinetic_runtime.local.line_keeper SLOTS_DIR SLOTS warm|fresh [LOCK_FD]

``warm`` forks each job's runtime from the runtime imported here, as the launcher does.
"""

import contextlib
import fcntl
import os
import select
import sys
import time
from pathlib import Path

from kinetic_runtime.local.dispatch import Spawn, dispatch
from kinetic_runtime.local.slot_queue import any_slot_free, line_empty
from kinetic_runtime.private_files import make_private_dirs, open_private

__all__ = [
    "KEEPER_LOCK",
    "POLL_SECONDS",
    "WAKE_FIFO",
    "keep",
    "keeper_running",
    "take_keeper_lock",
    "wake_keeper",
]

KEEPER_LOCK = "keeper.lock"
WAKE_FIFO = "keeper.wake"
"""Open for reading only by a running keeper: a supervisor that cannot open it for writing
knows there is none (``ENXIO``)."""
POLL_SECONDS = 0.05
"""How often the keeper looks for a slot that a killed supervisor freed (a few lock tries)."""


def take_keeper_lock(slots_dir: Path) -> int | None:
    """A descriptor holding the line's keeper lock; None if a keeper holds it."""
    make_private_dirs(slots_dir)
    fd = open_private(slots_dir / KEEPER_LOCK, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    return fd


def keeper_running(slots_dir: Path) -> bool:
    fd = take_keeper_lock(slots_dir)
    if fd is None:
        return True
    os.close(fd)
    return False


def wake_keeper(slots_dir: Path) -> bool:
    """Tell the line's keeper that a slot is free; False if no keeper runs."""
    try:
        fd = os.open(slots_dir / WAKE_FIFO, os.O_WRONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:  # ENXIO: nobody reads it; ENOENT: no keeper ever ran here
        return False
    try:
        os.write(fd, b"\0")
    except BlockingIOError:
        pass  # full of wakes the keeper has yet to read: it is woken already
    except OSError:
        return False
    finally:
        os.close(fd)
    return True


def _open_wakes(slots_dir: Path) -> tuple[int, int] | None:
    """Both ends of the line's wake FIFO, made if need be; None where no FIFO can be (the
    keeper then looks every ``POLL_SECONDS`` only). The write end is held too: a FIFO whose
    last writer has gone reads as ended (ready for ever), not as empty."""
    path = slots_dir / WAKE_FIFO
    try:
        with contextlib.suppress(FileExistsError):
            os.mkfifo(path, 0o600)
        reader = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        writer = os.open(path, os.O_WRONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        os.close(reader)
        return None
    return reader, writer


def _await_wake(reader: int | None, timeout: float) -> None:
    """Until a supervisor wakes the keeper or ``timeout`` passes (only that, with no FIFO)."""
    if reader is None:
        time.sleep(timeout)
    elif select.select([reader], [], [], timeout)[0]:
        with contextlib.suppress(BlockingIOError):
            while os.read(reader, 4096):
                pass


def keep(
    slots_dir: Path,
    slots: int,
    spawn: Spawn,
    poll: float = POLL_SECONDS,
    lock: int | None = None,
) -> int:
    """Dispatch whenever a slot is free, until the line is empty; ``lock``: the keeper lock,
    if the caller took it."""
    if lock is None:
        lock = take_keeper_lock(slots_dir)
    if lock is None:
        return 0
    wakes = _open_wakes(slots_dir)
    try:
        return _keep(slots_dir, slots, spawn, poll, lock, wakes[0] if wakes else None)
    finally:
        for fd in wakes or ():
            os.close(fd)


def _keep(
    slots_dir: Path, slots: int, spawn: Spawn, poll: float, lock: int | None, wakes: int | None
) -> int:
    while lock is not None:
        try:
            if any_slot_free(slots_dir, slots):
                dispatch(slots_dir, spawn)
            if line_empty(slots_dir):
                # Let go, then look again: whoever put a ticket in line while this held the
                # lock (and so started no keeper) is seen now.
                os.close(lock)
                lock = None
                if line_empty(slots_dir):
                    return 0
                lock = take_keeper_lock(slots_dir)
                continue
        except BaseException:
            if lock is not None:
                os.close(lock)
            raise
        _await_wake(wakes, poll)
    return 0


def main(argv: list[str]) -> int:
    from kinetic_runtime.local.spawners import forked, runtime_start

    warm = None
    if argv[2] == "warm":
        from kinetic_runtime.local.launcher import fork_runtime

        warm = fork_runtime
    lock = int(argv[3]) if len(argv) > 3 else None
    return keep(Path(argv[0]), int(argv[1]), forked(runtime_start(warm)), lock=lock)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
