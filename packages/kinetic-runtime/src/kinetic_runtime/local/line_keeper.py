"""One process per line that starts waiting jobs when nobody else will.

A slot is freed, and the next job started, by the supervisor of the job that ends. A supervisor
killed with ``kill -9`` frees its slot without starting anyone: the keeper, which runs while
jobs wait, notices the free slot and dispatches. Without a launcher it starts every job, since
a client never dispatches (``kinetic.local.line``). Any client that submits a job, or reads the
state of one that waits, starts a keeper when none holds the line's keeper lock, so a keeper
killed too is replaced by the next that looks. The client takes that lock before it starts the
keeper, which inherits it: a thousand submissions in the moment a keeper takes to start start
one keeper, not a thousand.

    python -m kinetic_runtime.local.line_keeper SLOTS_DIR SLOTS warm|fresh [LOCK_FD]

``warm`` forks each job's runtime from the runtime imported here, as the launcher does.
"""

import fcntl
import os
import sys
import time
from pathlib import Path

from kinetic_runtime.local.dispatch import Spawn, dispatch
from kinetic_runtime.local.slot_queue import any_slot_free, line_empty
from kinetic_runtime.private_files import make_private_dirs, open_private

__all__ = ["KEEPER_LOCK", "POLL_SECONDS", "keep", "keeper_running", "take_keeper_lock"]

KEEPER_LOCK = "keeper.lock"
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
        time.sleep(poll)
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
