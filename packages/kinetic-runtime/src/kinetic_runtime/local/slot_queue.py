"""The line local jobs wait in for a slot: higher priority first, then the order of submission.

A waiting job is a record, not a process: a *ticket*, an empty file named
``<rank>-<number>-<job id>``, so that names sort in the order jobs get slots (``rank`` falls as
the priority rises; ``number`` is the job's place in the order of submission, taken from the
line's counter). Tickets are kept in *buckets* of ``BUCKET_SIZE`` numbers of one rank,
``<slots>/waiting/<rank>-<number // BUCKET_SIZE>/``, whose names sort in line order too: the
head of a line of any length is found by listing the buckets and the first of them, not every
ticket.

The submitter writes a ticket once the job's directory is whole; the dispatcher
(``kinetic_runtime.local.dispatch``) removes it once the job's supervisor has claimed the job,
and a cancel removes it with the job. A bucket found empty is removed (``rmdir``, which fails
on one that is not); a submitter whose bucket went away meanwhile makes it again. A slot is one
of ``slots`` lock files, held (``flock``) by a running job's supervisor and runtimes, so a killed
job frees its slot.
"""

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from kinetic_runtime.private_files import make_private_dirs, open_private, write_private_atomically

__all__ = [
    "BUCKET_SIZE",
    "WAITING_DIR",
    "any_slot_free",
    "head_tickets",
    "in_line",
    "join_line",
    "leave_line",
    "line_empty",
    "take_free_slot",
    "take_number",
    "ticket_name",
    "ticket_of",
    "waiting_jobs",
]

WAITING_DIR = "waiting"
COUNTER_FILE = "counter"
BUCKET_SIZE = 1000
_RANK_BASE = 2**31
"""Priorities are 32-bit signed values (those of Kueue's WorkloadPriorityClasses): the rank
``_RANK_BASE - priority`` is never negative, and ten digits hold it."""
_NUMBER_DIGITS = 20
_HIDDEN = "."


def ticket_name(priority: int, number: int, job_id: str) -> str:
    """The name that sorts before every ticket of a lower priority, or of the same priority
    and a later submission."""
    return f"{_RANK_BASE - priority:010d}-{number:0{_NUMBER_DIGITS}d}-{job_id}"


def ticket_of(launch: dict[str, Any]) -> str:
    """The ticket of the job ``launch.json`` describes."""
    return ticket_name(
        int(launch.get("priority") or 0), int(launch["line_number"]), launch["job_id"]
    )


def job_of(name: str) -> str:
    return name.split("-", 2)[2]


def _bucket_of(name: str) -> str:
    rank, number, _job = name.split("-", 2)
    return f"{rank}-{int(number) // BUCKET_SIZE:0{_NUMBER_DIGITS}d}"


def take_number(slots_dir: Path) -> int:
    """The next number of the line's counter: a job's place in the order of submission. The
    counter is rewritten in place, so a submitter killed at any point leaves it whole."""
    make_private_dirs(slots_dir)
    fd = open_private(slots_dir / COUNTER_FILE, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        number = int(os.pread(fd, _NUMBER_DIGITS, 0) or b"0")
        os.pwrite(fd, f"{number + 1:0{_NUMBER_DIGITS}d}".encode(), 0)
    finally:
        os.close(fd)
    return number


def _names(directory: Path) -> list[str]:
    try:
        names = os.listdir(directory)
    except (FileNotFoundError, NotADirectoryError):
        return []
    return sorted(name for name in names if not name.startswith(_HIDDEN))


def _remove_if_empty(bucket: Path) -> None:
    with contextlib.suppress(OSError):  # not empty (a ticket came), or removed already
        bucket.rmdir()


def _tickets_by_bucket(slots_dir: Path) -> Iterator[list[str]]:
    """Each non-empty bucket's tickets, in line order, buckets found empty removed."""
    waiting = slots_dir / WAITING_DIR
    for bucket in _names(waiting):
        names = _names(waiting / bucket)
        if names:
            yield names
        else:
            _remove_if_empty(waiting / bucket)


def head_tickets(slots_dir: Path) -> list[str]:
    """The tickets of the first bucket that holds any, in line order: the head of the line."""
    return next(_tickets_by_bucket(slots_dir), [])


def line_empty(slots_dir: Path) -> bool:
    """Whether no ticket waits (looks for one ticket, not at whole buckets)."""
    waiting = slots_dir / WAITING_DIR
    for bucket in _names(waiting):
        with contextlib.suppress(FileNotFoundError), os.scandir(waiting / bucket) as entries:
            if any(not entry.name.startswith(_HIDDEN) for entry in entries):
                return False
        _remove_if_empty(waiting / bucket)
    return True


def waiting_jobs(slots_dir: Path) -> list[str]:
    """The ids of the jobs waiting for a slot, in the order they will get one."""
    return [job_of(name) for names in _tickets_by_bucket(slots_dir) for name in names]


def _ticket_path(slots_dir: Path, name: str) -> Path:
    return slots_dir / WAITING_DIR / _bucket_of(name) / name


def join_line(slots_dir: Path, name: str) -> None:
    """Put a ticket in line (whole or not at all: it is renamed into place)."""
    path = _ticket_path(slots_dir, name)
    while True:
        try:
            make_private_dirs(path.parent)
            write_private_atomically(path, b"")
        except FileNotFoundError:
            # Its bucket was removed as empty just now, while this made it or wrote in it
            # (another joiner may have made it again since, so whether it is there now says
            # nothing): make it and try again.
            continue
        return


def in_line(slots_dir: Path, name: str) -> bool:
    return _ticket_path(slots_dir, name).exists()


def leave_line(slots_dir: Path, name: str) -> None:
    path = _ticket_path(slots_dir, name)
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
    _remove_if_empty(path.parent)


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
