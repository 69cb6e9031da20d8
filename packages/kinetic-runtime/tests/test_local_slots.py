"""The local slot limit: a supervisor holds one of ``slots`` lock files while its job runs.

A waiter that finds no free slot sleeps between polls; the test hooks that sleep to know, without
sleeping itself, that the waiter has tried every slot and been refused.
"""

import os
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from kinetic_runtime.local import slot_queue, supervisor

DEADLINE_S = 30.0


class Waiter:
    """``acquire_slot`` in a thread; ``refused`` is set once it has found every slot taken."""

    def __init__(self, slots_dir: Path, slots: int, job_dir: Path, refused: threading.Event):
        self.job_dir = job_dir
        self.refused = refused
        self.done = threading.Event()
        self.slot: int | None = None
        self._thread = threading.Thread(
            target=self._run, args=(slots_dir, slots), name="slot-waiter", daemon=True
        )
        self._thread.start()

    def _run(self, slots_dir: Path, slots: int) -> None:
        try:
            self.slot = _acquire(slots_dir, slots, self.job_dir)
        finally:
            self.done.set()

    def wait_refused_or_done(self) -> None:
        deadline = time.monotonic() + DEADLINE_S
        while not (self.refused.is_set() or self.done.is_set()):
            assert time.monotonic() < deadline, "the waiter neither got a slot nor polled"
            self.refused.wait(0.01)

    def result(self) -> int | None:
        assert self.done.wait(DEADLINE_S), "the waiter is still waiting for a slot"
        self._thread.join(DEADLINE_S)
        return self.slot


@pytest.fixture
def refused(monkeypatch: pytest.MonkeyPatch) -> threading.Event:
    """Set when ``acquire_slot`` first sleeps, which it does only after every slot refused it."""
    event = threading.Event()

    def sleep(seconds: float) -> None:
        event.set()
        time.sleep(seconds)

    monkeypatch.setattr(slot_queue, "time", SimpleNamespace(sleep=sleep))
    return event


@pytest.fixture
def slots_dir(tmp_path: Path) -> Path:
    return tmp_path / "slots"


@pytest.fixture
def job_dirs(tmp_path: Path) -> list[Path]:
    dirs = [tmp_path / f"job-{i}" for i in range(3)]
    for job_dir in dirs:
        job_dir.mkdir()
    return dirs


def _acquire(slots_dir: Path, slots: int, job_dir: Path) -> int | None:
    """A slot for the job in ``job_dir``, all jobs of one priority, in the order they ask."""
    ticket = slot_queue.ticket_name(0, time.time_ns(), job_dir.name)
    cancelled = (job_dir / supervisor.CANCEL_MARKER).exists
    return slot_queue.acquire_slot(slots_dir, slots, ticket, cancelled=cancelled)


def _release(slot: int | None) -> None:
    if slot is not None:
        os.close(slot)


def test_a_second_acquire_waits_while_the_only_slot_is_held_and_gets_it_once_freed(
    slots_dir: Path, job_dirs: list[Path], refused: threading.Event
) -> None:
    first = _acquire(slots_dir, 1, job_dirs[0])
    assert first is not None
    assert not refused.is_set(), "a free slot was taken without waiting"
    second = Waiter(slots_dir, 1, job_dirs[1], refused)
    try:
        second.wait_refused_or_done()
        assert not second.done.is_set(), "a second job took the only slot while the first held it"
        _release(first)
        first = None
        assert second.result() is not None, "the freed slot went to nobody"
    finally:
        (job_dirs[1] / supervisor.CANCEL_MARKER).touch()
        _release(first)
        _release(second.result())


def test_a_cancel_while_waiting_returns_without_a_slot(
    slots_dir: Path, job_dirs: list[Path], refused: threading.Event
) -> None:
    first = _acquire(slots_dir, 1, job_dirs[0])
    assert first is not None
    second = Waiter(slots_dir, 1, job_dirs[1], refused)
    try:
        second.wait_refused_or_done()
        assert not second.done.is_set(), "a second job took the only slot while the first held it"
        (job_dirs[1] / supervisor.CANCEL_MARKER).touch()
        assert second.result() is None, "a cancelled waiter came back holding a slot"
        # The first job's slot is still its own: a third job has to wait for it too.
        refused.clear()
        third = Waiter(slots_dir, 1, job_dirs[2], refused)
        third.wait_refused_or_done()
        assert not third.done.is_set(), "the cancelled waiter left the slot limit broken"
        (job_dirs[2] / supervisor.CANCEL_MARKER).touch()
        assert third.result() is None
    finally:
        for job_dir in job_dirs[1:]:
            (job_dir / supervisor.CANCEL_MARKER).touch()
        _release(first)
        _release(second.result())


def test_each_of_several_slots_goes_to_one_job_only(
    slots_dir: Path, job_dirs: list[Path], refused: threading.Event
) -> None:
    held = [_acquire(slots_dir, 2, job_dir) for job_dir in job_dirs[:2]]
    try:
        assert None not in held and len(set(held)) == 2
        assert not refused.is_set(), "two slots did not take two jobs without waiting"
        third = Waiter(slots_dir, 2, job_dirs[2], refused)
        third.wait_refused_or_done()
        assert not third.done.is_set(), "a third job got a slot while both were held"
        (job_dirs[2] / supervisor.CANCEL_MARKER).touch()
        assert third.result() is None
    finally:
        (job_dirs[2] / supervisor.CANCEL_MARKER).touch()
        for slot in held:
            _release(slot)
