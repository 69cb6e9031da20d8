"""Which supervisor runs a job: the one that claimed it, once.

The submitter sets a ``claim`` file aside in the job directory (blank room for a pid). A
supervisor claims the job by renaming it to a name of its own (atomic: of two, one wins), writes
its pid into that room in place and renames it to ``supervisor.pid``. None of that needs new
room, so a job started on a full disk is still claimed and recorded. A job that still has its
``claim`` was never started; one with ``supervisor.pid`` was, by the process it names (the
leader of the job's process group).
"""

import contextlib
import os
from pathlib import Path

from kinetic_runtime.private_files import write_private

__all__ = [
    "CLAIM_FILE",
    "PID_FILE",
    "claim",
    "read_pid",
    "set_claim_aside",
    "unclaimed",
    "withdraw",
]

CLAIM_FILE = "claim"
PID_FILE = "supervisor.pid"
_PID_ROOM = 20


def set_claim_aside(job_dir: Path) -> None:
    write_private(job_dir / CLAIM_FILE, b" " * _PID_ROOM)


def unclaimed(job_dir: Path) -> bool:
    return (job_dir / CLAIM_FILE).exists()


def claim(job_dir: Path) -> bool:
    """Take the job for this process; False if another took it (or it was withdrawn)."""
    mine = job_dir / f"{CLAIM_FILE}.{os.getpid()}"
    try:
        os.rename(job_dir / CLAIM_FILE, mine)
    except FileNotFoundError:
        return False
    fd = os.open(mine, os.O_WRONLY | os.O_NOFOLLOW)
    try:
        os.pwrite(fd, str(os.getpid()).encode().ljust(_PID_ROOM), 0)
    finally:
        os.close(fd)
    os.rename(mine, job_dir / PID_FILE)
    return True


def withdraw(job_dir: Path) -> bool:
    """Make sure nothing ever claims the job; False if a supervisor already has."""
    try:
        os.rename(job_dir / CLAIM_FILE, job_dir / f"{CLAIM_FILE}.withdrawn")
    except FileNotFoundError:
        return False
    return True


def read_pid(job_dir: Path) -> int | None:
    """The pid of the job's supervisor; None if none has claimed it."""
    with contextlib.suppress(FileNotFoundError, ValueError):
        return int((job_dir / PID_FILE).read_text().strip())
    return None
