"""Which supervisor runs a job: the one that claimed it, once.

The submitter sets a ``claim`` file aside in the job directory (blank room for a process
identity). A supervisor claims the job by renaming it to a name of its own (atomic: of two, one
wins; the name carries its identity), writes its identity into that room in place and renames it
to ``supervisor.pid``. None of that needs new room, so a job started on a full disk is still
claimed and recorded. A job that still has its ``claim`` was never started; one with
``supervisor.pid`` was, by the process it names (the leader of the job's process group).

The identity is the pid with the process's start time (``processes.process_identity``): a pid
alone may be another process's by the time someone reads it, and that process's group is not
the job's to kill.
"""

import contextlib
import os
from pathlib import Path
from typing import NamedTuple

from kinetic_runtime.local.processes import process_identity
from kinetic_runtime.private_files import write_private

__all__ = [
    "CLAIM_FILE",
    "PID_FILE",
    "Claimant",
    "claim",
    "read_claimant",
    "set_claim_aside",
    "unclaimed",
    "withdraw",
]

CLAIM_FILE = "claim"
PID_FILE = "supervisor.pid"
_IDENTITY_ROOM = 32
"""Room for ``pid:start_ticks``: a 7-digit pid (Linux's largest ``pid_max``) and a 64-bit
tick count take 28 bytes."""


class Claimant(NamedTuple):
    """The supervisor that claimed a job: its pid, which is its process group's id, and its
    process identity (a bare pid where no start time was recorded: an older job directory)."""

    pid: int
    identity: str

    @classmethod
    def parse(cls, text: str) -> "Claimant | None":
        """The claimant ``text`` (``pid`` or ``pid:start_ticks``) names; None if it names none."""
        identity = text.strip()
        pid, has_start, start = identity.partition(":")
        if not _count(pid, below=2**31) or (has_start and not _count(start, below=2**64)):
            return None
        return cls(int(pid), identity)


def _count(text: str, *, below: int) -> bool:
    return text.isascii() and text.isdigit() and 0 < int(text) < below


def set_claim_aside(job_dir: Path) -> None:
    write_private(job_dir / CLAIM_FILE, b" " * _IDENTITY_ROOM)


def unclaimed(job_dir: Path) -> bool:
    return (job_dir / CLAIM_FILE).exists()


def claim(job_dir: Path) -> bool:
    """Take the job for this process; False if another took it (or it was withdrawn)."""
    identity = process_identity(os.getpid())
    mine = job_dir / f"{CLAIM_FILE}.{identity}"
    try:
        os.rename(job_dir / CLAIM_FILE, mine)
    except FileNotFoundError:
        return False
    fd = os.open(mine, os.O_WRONLY | os.O_NOFOLLOW)
    try:
        os.pwrite(fd, identity.encode().ljust(_IDENTITY_ROOM), 0)
    finally:
        os.close(fd)
    os.rename(mine, job_dir / PID_FILE)
    return True


_WITHDRAWN = f"{CLAIM_FILE}.withdrawn"


def withdraw(job_dir: Path) -> bool:
    """Make sure nothing ever claims the job; False if a supervisor already has."""
    try:
        os.rename(job_dir / CLAIM_FILE, job_dir / _WITHDRAWN)
    except FileNotFoundError:
        return False
    return True


def read_claimant(job_dir: Path) -> Claimant | None:
    """The supervisor that claimed the job; None if none has."""
    with contextlib.suppress(FileNotFoundError):
        return _recorded(job_dir)
    in_progress = _claim_in_progress(job_dir)
    if in_progress is not None:
        return in_progress
    # Looked at in the order a claim is made, then once more: a claim recorded between the
    # first two looks is seen now.
    with contextlib.suppress(FileNotFoundError):
        return _recorded(job_dir)
    return None


def _recorded(job_dir: Path) -> Claimant | None:
    """The claimant ``supervisor.pid`` names; FileNotFoundError if there is none."""
    try:
        return Claimant.parse((job_dir / PID_FILE).read_text())
    except UnicodeDecodeError:
        return None


def _claim_in_progress(job_dir: Path) -> Claimant | None:
    """The supervisor whose claim has the job but is not recorded yet: it is recording it, or
    it was killed meanwhile. The claim's name says who it is either way, so such a job is
    settled as one whose supervisor died instead of looking unstarted for ever."""
    with contextlib.suppress(OSError):
        for name in os.listdir(job_dir):
            prefix, dot, identity = name.partition(".")
            if prefix == CLAIM_FILE and dot and name != _WITHDRAWN:
                return Claimant.parse(identity)
    return None
