"""The line local jobs wait in for a slot: higher priority first, then the order of submission.

Each supervisor waiting for a slot holds a *ticket*: a file in ``<slots>/waiting`` named
``<rank>-<submitted>-<job id>``, so that names sort in the order jobs get slots (``rank`` falls
as the priority rises), and kept locked (``flock``) for as long as it waits. Only the holder of
the first ticket polls the slots; every other waits on the lock of the ticket just ahead of
its own, which is released when that job gets a slot or its supervisor dies, and then looks
again (a job of higher priority may have come in ahead of it meanwhile).

A ticket whose lock nobody holds was left by a supervisor that was killed while it waited
(a cancel does that): whoever finds one removes it. A ticket is made under a hidden name and
renamed into place once locked, so a listed ticket without a lock is always such a leftover.
"""

import contextlib
import fcntl
import os
import time
from collections.abc import Callable
from pathlib import Path

from kinetic_runtime.private_files import make_private_dirs, open_private

__all__ = ["WAITING_DIR", "Ticket", "acquire_slot", "ticket_name", "waiting_jobs"]

WAITING_DIR = "waiting"
_RANK_BASE = 2**31
"""Priorities are 32-bit signed values (those of Kueue's WorkloadPriorityClasses): the rank
``_RANK_BASE - priority`` is never negative, and ten digits hold it."""
_HIDDEN = "."


def ticket_name(priority: int, submitted_ns: int, job_id: str) -> str:
    """The name that sorts before every ticket of a lower priority, or of the same priority
    and a later submission."""
    return f"{_RANK_BASE - priority:010d}-{submitted_ns:020d}-{job_id}"


def _job_id(name: str) -> str:
    return name.split("-", 2)[2]


def _held(path: Path) -> bool | None:
    """Whether the ticket at ``path`` is locked by its holder; None once it is gone."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


def _tickets(waiting: Path) -> list[str]:
    """Every ticket's name, sorted (leftovers too)."""
    try:
        return sorted(name for name in os.listdir(waiting) if not name.startswith(_HIDDEN))
    except FileNotFoundError:
        return []


def waiting_jobs(slots_dir: Path) -> list[str]:
    """The ids of the jobs waiting for a slot, in the order they will get one."""
    waiting = slots_dir / WAITING_DIR
    return [_job_id(name) for name in _tickets(waiting) if _held(waiting / name)]


class Ticket:
    """One supervisor's place in the line, held from :meth:`take` to :meth:`leave`."""

    def __init__(self, waiting: Path, name: str, fd: int) -> None:
        self._waiting, self.name, self._fd = waiting, name, fd

    @classmethod
    def take(cls, slots_dir: Path, name: str) -> "Ticket":
        waiting = slots_dir / WAITING_DIR
        make_private_dirs(waiting)
        hidden = waiting / f"{_HIDDEN}{name}-{os.getpid()}"
        fd = open_private(hidden, os.O_RDWR)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            os.rename(hidden, waiting / name)
        except BaseException:
            os.close(fd)
            with contextlib.suppress(FileNotFoundError):
                hidden.unlink()
            raise
        return cls(waiting, name, fd)

    def ahead(self) -> str | None:
        """The ticket just ahead of this one whose holder still waits; None at the head.
        Leftovers met on the way are removed."""
        for name in reversed([name for name in _tickets(self._waiting) if name < self.name]):
            held = _held(self._waiting / name)
            if held:
                return name
            if held is False:
                with contextlib.suppress(FileNotFoundError):
                    (self._waiting / name).unlink()
        return None

    def wait_behind(self, name: str) -> None:
        """Block until the holder of ticket ``name`` has left the line (or died)."""
        try:
            fd = os.open(self._waiting / name, os.O_RDONLY)
        except FileNotFoundError:
            return
        try:
            fcntl.flock(fd, fcntl.LOCK_SH)
        finally:
            os.close(fd)

    def leave(self) -> None:
        """Out of the line: the name first, so nobody waits on it any more, then the lock,
        which wakes whoever waited behind it."""
        with contextlib.suppress(FileNotFoundError):
            (self._waiting / self.name).unlink()
        os.close(self._fd)


def acquire_slot(
    slots_dir: Path, slots: int, ticket: str, *, cancelled: Callable[[], bool]
) -> int | None:
    """Hold one of ``slots`` lock files, waiting in line under ``ticket``; None if the job was
    ``cancelled`` while it waited.

    A slot found free is kept only by the first in line: a waiter that took one just as a job
    of higher priority came in ahead of it (or before it noticed) gives it back at once."""
    make_private_dirs(slots_dir)
    handles = [open_private(slots_dir / f"{i}.lock", os.O_RDWR) for i in range(slots)]
    acquired: int | None = None
    place = Ticket.take(slots_dir, ticket)
    try:
        delay = 0.001
        while not cancelled():
            slot = _free_slot(handles)
            ahead = place.ahead()
            if ahead is None and slot is not None:
                acquired = slot
                break
            if slot is not None:
                fcntl.flock(slot, fcntl.LOCK_UN)
            if ahead is not None:
                place.wait_behind(ahead)
                delay = 0.001
            else:
                time.sleep(delay)
                delay = min(delay * 2, 0.01)
    finally:
        place.leave()
        for fd in handles:
            if fd != acquired:
                os.close(fd)
    return acquired


def _free_slot(handles: list[int]) -> int | None:
    """The first of ``handles`` whose lock this process could take now (it holds it)."""
    for fd in handles:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            continue
        return fd
    return None
