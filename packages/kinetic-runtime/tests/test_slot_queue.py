"""The line local jobs wait in for a slot: priority first, then submission, whatever order the
waiters arrived in; a killed waiter's ticket holds nobody up (issue 49).

Each waiter is a thread with its own descriptors (``flock`` locks belong to open files, so
threads contend as processes do). Whether the waiters are in line is read from the line itself
(``waiting_jobs``), never from time passing.
"""

import contextlib
import fcntl
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from kinetic_runtime.local import slot_queue

DEADLINE_S = 30.0


class Waiter(threading.Thread):
    """Waits in line for the one slot, notes that it got it in ``order``, and frees it."""

    def __init__(self, slots_dir: Path, name: str, priority: int, submitted: int, order: list[str]):
        super().__init__(name=f"waiter-{name}", daemon=True)
        self.ticket = slot_queue.ticket_name(priority, submitted, name)
        self.slots_dir, self.job, self.order = slots_dir, name, order
        self.cancelled = threading.Event()

    def run(self) -> None:
        slot = slot_queue.acquire_slot(
            self.slots_dir, 1, self.ticket, cancelled=self.cancelled.is_set
        )
        if slot is not None:
            self.order.append(self.job)
            os.close(slot)


@pytest.fixture
def slots_dir(tmp_path: Path) -> Path:
    return tmp_path / "slots"


@pytest.fixture
def held_slot(slots_dir: Path) -> Iterator[int]:
    """The only slot, taken by a job that is not in line any more (it runs)."""
    ticket = slot_queue.ticket_name(0, 0, "running")
    slot = slot_queue.acquire_slot(slots_dir, 1, ticket, cancelled=lambda: False)
    assert slot is not None
    try:
        yield slot
    finally:
        with contextlib.suppress(OSError):
            os.close(slot)


def _wait_in_line(slots_dir: Path, jobs: list[str]) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while sorted(slot_queue.waiting_jobs(slots_dir)) != sorted(jobs):
        assert time.monotonic() < deadline, f"not all of {jobs} got in line"
        threading.Event().wait(0.005)


def _run_line(slots_dir: Path, held: int, waiters: list[Waiter]) -> None:
    for waiter in waiters:
        waiter.start()
    try:
        _wait_in_line(slots_dir, [waiter.job for waiter in waiters])
        os.close(held)
        for waiter in waiters:
            waiter.join(DEADLINE_S)
            assert not waiter.is_alive(), f"{waiter.job} never got the slot"
    finally:
        for waiter in waiters:
            waiter.cancelled.set()


def test_a_higher_priority_gets_the_slot_first_whatever_the_order_of_arrival(
    slots_dir: Path, held_slot: int
) -> None:
    order: list[str] = []
    waiters = [
        Waiter(slots_dir, "low", -100, 1, order),
        Waiter(slots_dir, "normal", 0, 2, order),
        Waiter(slots_dir, "high", 100, 3, order),
    ]
    _run_line(slots_dir, held_slot, waiters)
    assert order == ["high", "normal", "low"]


def test_one_priority_is_served_in_the_order_of_submission_not_of_arrival(
    slots_dir: Path, held_slot: int
) -> None:
    order: list[str] = []
    waiters = [Waiter(slots_dir, f"job{n}", 0, n, order) for n in (3, 1, 2)]
    _run_line(slots_dir, held_slot, waiters)
    assert order == ["job1", "job2", "job3"]


def test_the_line_lists_jobs_in_the_order_they_will_get_a_slot(
    slots_dir: Path, held_slot: int
) -> None:
    order: list[str] = []
    waiters = [Waiter(slots_dir, "b", 0, 2, order), Waiter(slots_dir, "a", 0, 1, order)]
    waiters.append(Waiter(slots_dir, "urgent", 100, 3, order))
    for waiter in waiters:
        waiter.start()
    try:
        _wait_in_line(slots_dir, ["a", "b", "urgent"])
        assert slot_queue.waiting_jobs(slots_dir) == ["urgent", "a", "b"]
    finally:
        for waiter in waiters:
            waiter.cancelled.set()
        os.close(held_slot)
        for waiter in waiters:
            waiter.join(DEADLINE_S)


def test_the_ticket_of_a_waiter_that_was_killed_holds_nobody_up(
    slots_dir: Path, held_slot: int
) -> None:
    """A killed supervisor's ticket stays behind unlocked: it is not in line, and a job behind
    it gets the slot (and removes it)."""
    waiting = slots_dir / slot_queue.WAITING_DIR
    waiting.mkdir(parents=True, exist_ok=True)
    leftover = waiting / slot_queue.ticket_name(100, 0, "killed")
    leftover.touch()
    assert slot_queue.waiting_jobs(slots_dir) == []
    order: list[str] = []
    _run_line(slots_dir, held_slot, [Waiter(slots_dir, "behind", 0, 1, order)])
    assert order == ["behind"]
    assert not leftover.exists()


def test_a_ticket_is_locked_from_the_moment_it_is_listed(slots_dir: Path) -> None:
    ticket = slot_queue.Ticket.take(slots_dir, slot_queue.ticket_name(0, 1, "job"))
    try:
        path = slots_dir / slot_queue.WAITING_DIR / ticket.name
        fd = os.open(path, os.O_RDONLY)
        try:
            with pytest.raises(BlockingIOError):
                fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        finally:
            os.close(fd)
        assert os.listdir(path.parent) == [ticket.name]
    finally:
        ticket.leave()
    assert os.listdir(slots_dir / slot_queue.WAITING_DIR) == []
