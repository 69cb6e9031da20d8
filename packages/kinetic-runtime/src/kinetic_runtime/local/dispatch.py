"""Start waiting local jobs on free slots, one dispatcher at a time.

Whoever may have freed a slot or filled the line dispatches: a supervisor whose job ended, the
launcher (asked by a client), or the line's keeper (``kinetic_runtime.local.line_keeper``).
Never a client: it could be stopped (Ctrl-Z) while it held the lock. Under the dispatch lock,
the job at the head of the line is given a free slot and its supervisor is started holding it;
its ticket is removed only once that supervisor has claimed the job
(``kinetic_runtime.local.claim``). So a dispatcher killed at any point leaves the job either in
line (the next dispatcher starts it) or claimed (it runs, and the next one drops its ticket):
never started twice, never lost.

Whoever looks at the slots without the dispatch lock (``any_slot_free``) holds a free slot for a
moment and then dispatches itself, so a dispatcher that found every slot taken can stop.
"""

import contextlib
import fcntl
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kinetic_runtime.local.claim import unclaimed
from kinetic_runtime.local.slot_queue import head_tickets, job_of, leave_line, take_free_slot
from kinetic_runtime.private_files import make_private_dirs, open_private

__all__ = ["CANCEL_MARKER", "DISPATCH_LOCK", "LAUNCH_FILE", "Spawn", "dispatch", "jobs_dir"]

DISPATCH_LOCK = "dispatch.lock"
LAUNCH_FILE = "launch.json"
CANCEL_MARKER = "cancelled"

Spawn = Callable[[Path, dict[str, Any], int], bool]
"""``(job_dir, launch, slot_fd) -> claimed``: start the job's supervisor in a session of its
own, holding ``slot_fd``'s lock, and wait until it has claimed the job (or failed to)."""


def jobs_dir(slots_dir: Path) -> Path:
    """Where the jobs of the line in ``slots_dir`` have their directories."""
    return slots_dir.parent / "jobs"


def _launch(job_dir: Path) -> dict[str, Any] | None:
    """The job's ``launch.json``; None if the job is gone, cancelled or already started."""
    if (job_dir / CANCEL_MARKER).exists() or not unclaimed(job_dir):
        return None
    try:
        launch: dict[str, Any] = json.loads((job_dir / LAUNCH_FILE).read_text())
    except (OSError, ValueError):
        return None
    return launch


def _start_head(slots_dir: Path, name: str, spawn: Spawn) -> bool:
    """Start the job of ticket ``name`` (or drop a ticket whose job needs no start); False
    when it has to wait: no slot is free, or its supervisor could not claim it."""
    job_dir = jobs_dir(slots_dir) / job_of(name)
    launch = _launch(job_dir)
    if launch is None:
        leave_line(slots_dir, name)
        return True
    slot = take_free_slot(slots_dir, int(launch.get("slots") or 1))
    if slot is None:
        return False
    try:
        claimed = spawn(job_dir, launch, slot)
    finally:
        os.close(slot)
    if claimed or not unclaimed(job_dir):
        leave_line(slots_dir, name)
        return True
    return False


def dispatch(slots_dir: Path, spawn: Spawn) -> None:
    """Start waiting jobs, in line order, while slots are free: a bucket of tickets at a time
    (``slot_queue``), so that a start costs what the head of the line costs."""
    make_private_dirs(slots_dir)
    lock = open_private(slots_dir / DISPATCH_LOCK, os.O_RDWR)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)
        while names := head_tickets(slots_dir):
            for name in names:
                if not _start_head(slots_dir, name, spawn):
                    return
    finally:
        with contextlib.suppress(OSError):
            os.close(lock)
