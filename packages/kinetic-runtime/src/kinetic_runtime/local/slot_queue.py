"""The line local jobs wait in for a slot: higher priority first, then the order of submission.

A waiting job is a record, not a process: a *ticket*, an empty file in ``<slots>/waiting``
named ``<rank>-<submitted>-<job id>``, so that names sort in the order jobs get slots (``rank``
falls as the priority rises). The submitter writes it once the job's directory is whole; the
dispatcher (``kinetic_runtime.local.dispatch``) removes it once the job's supervisor has
claimed the job, and a cancel removes it with the job. A slot is one of ``slots`` lock files,
held (``flock``) by a running job's supervisor and runtimes, so a killed job frees its slot.
"""

import contextlib
import fcntl
import os
from pathlib import Path
from typing import Any

from kinetic_runtime.private_files import make_private_dirs, open_private, write_private_atomically

__all__ = [
    "WAITING_DIR",
    "any_slot_free",
    "in_line",
    "join_line",
    "leave_line",
    "take_free_slot",
    "ticket_name",
    "ticket_of",
    "tickets",
    "waiting_jobs",
]

WAITING_DIR = "waiting"
_RANK_BASE = 2**31
"""Priorities are 32-bit signed values (those of Kueue's WorkloadPriorityClasses): the rank
``_RANK_BASE - priority`` is never negative, and ten digits hold it."""
_HIDDEN = "."


def ticket_name(priority: int, submitted_ns: int, job_id: str) -> str:
    """The name that sorts before every ticket of a lower priority, or of the same priority
    and a later submission."""
    return f"{_RANK_BASE - priority:010d}-{submitted_ns:020d}-{job_id}"


def ticket_of(launch: dict[str, Any]) -> str:
    """The ticket of the job ``launch.json`` describes."""
    return ticket_name(
        int(launch.get("priority") or 0), int(launch["submitted_ns"]), launch["job_id"]
    )


def job_of(name: str) -> str:
    return name.split("-", 2)[2]


def tickets(slots_dir: Path) -> list[str]:
    """Every ticket's name, in the order the jobs get slots."""
    try:
        names = os.listdir(slots_dir / WAITING_DIR)
    except FileNotFoundError:
        return []
    return sorted(name for name in names if not name.startswith(_HIDDEN))


def waiting_jobs(slots_dir: Path) -> list[str]:
    """The ids of the jobs waiting for a slot, in the order they will get one."""
    return [job_of(name) for name in tickets(slots_dir)]


def join_line(slots_dir: Path, name: str) -> None:
    """Put a ticket in line (whole or not at all: it is renamed into place)."""
    make_private_dirs(slots_dir / WAITING_DIR)
    write_private_atomically(slots_dir / WAITING_DIR / name, b"")


def in_line(slots_dir: Path, name: str) -> bool:
    return (slots_dir / WAITING_DIR / name).exists()


def leave_line(slots_dir: Path, name: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        (slots_dir / WAITING_DIR / name).unlink()


def take_free_slot(slots_dir: Path, slots: int) -> int | None:
    """A descriptor holding the lock of a free slot (its holder's until closed), or None."""
    make_private_dirs(slots_dir)
    for index in range(slots):
        fd = open_private(slots_dir / f"{index}.lock", os.O_RDWR)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue
        return fd
    return None


def any_slot_free(slots_dir: Path, slots: int) -> bool:
    """Whether a slot was free as this looked (it holds it a moment, then lets it go: whoever
    finds none free while this holds it can count on this caller to dispatch)."""
    fd = take_free_slot(slots_dir, slots)
    if fd is None:
        return False
    os.close(fd)
    return True
