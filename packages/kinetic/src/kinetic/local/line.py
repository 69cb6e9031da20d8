"""Getting waiting local jobs started: the client's part.

After a submission, and whenever it reads the state of a job that waits, the client looks for a
free slot and, finding one, has the line dispatched (``kinetic_runtime.local.dispatch``) by the
launcher, whose supervisors are warm. While jobs wait, it makes sure the line has a keeper
(``kinetic_runtime.local.line_keeper``), which dispatches whenever a slot is free: so a job never
waits on a process that is gone, whoever was killed.

The client never dispatches itself. A dispatcher holds the line's dispatch lock until the job it
starts is claimed, and a client can be stopped anywhere (Ctrl-Z, a debugger, SIGSTOP): one
stopped inside a dispatch would stop every job of the machine from starting until it was
resumed. Launcher and keeper run in sessions of their own, out of reach of the terminal.
"""

import os
import sys
from pathlib import Path

from kinetic.local import settings
from kinetic.local.environment import start_dispatcher
from kinetic.local.launcher_client import launcher_enabled, request_dispatch
from kinetic_runtime.local.line_keeper import take_keeper_lock
from kinetic_runtime.local.slot_queue import any_slot_free

__all__ = ["ensure_keeper", "start_waiting"]


def start_waiting(slots_dir: Path, python: str) -> None:
    """Have waiting jobs started if a slot is free (a few lock tries when none is): by the
    launcher, else by the line's keeper, started here if none runs."""
    if not any_slot_free(slots_dir, settings.local_slots()):
        return
    if launcher_enabled(python) and request_dispatch(slots_dir):
        return
    ensure_keeper(slots_dir)


def ensure_keeper(slots_dir: Path) -> None:
    """Start the line's keeper if none runs, handing it the keeper lock taken here, so that
    nobody starts a second one meanwhile; OSError if it cannot be started."""
    lock = take_keeper_lock(slots_dir)
    if lock is None:
        return
    warm = "warm" if settings.LAUNCHER.flag() else "fresh"
    command = [
        sys.executable,
        "-m",
        "kinetic_runtime.local.line_keeper",
        str(slots_dir),
        str(settings.local_slots()),
        warm,
        str(lock),
    ]
    try:
        start_dispatcher(command, slots_dir / "keeper.log", pass_fds=(lock,))
    finally:
        os.close(lock)  # the keeper holds it now (or nobody, and the next look tries again)
