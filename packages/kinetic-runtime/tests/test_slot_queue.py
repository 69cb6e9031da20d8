"""The line of waiting local jobs kept in buckets (issue 53): the order is priority, then
submission, across buckets and within one; the head is found by listing the buckets and the
first of them; a bucket emptied is removed, and a ticket whose bucket was removed as it joined
is kept all the same.
"""

import os
import random
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pytest

from kinetic_runtime.local import slot_queue
from kinetic_runtime.local.slot_queue import BUCKET_SIZE, WAITING_DIR


@pytest.fixture
def slots_dir(tmp_path: Path) -> Path:
    return tmp_path / "slots"


def _join(slots_dir: Path, job: str, number: int, priority: int = 0) -> str:
    name = slot_queue.ticket_name(priority, number, job)
    slot_queue.join_line(slots_dir, name)
    return name


def _buckets(slots_dir: Path) -> list[str]:
    return sorted(os.listdir(slots_dir / WAITING_DIR))


def test_jobs_wait_by_priority_then_submission_across_buckets_and_within_one(
    slots_dir: Path,
) -> None:
    jobs = [
        ("low-early", 1, -100),
        ("normal-0", 2, 0),
        ("normal-1", BUCKET_SIZE - 1, 0),
        ("normal-2", BUCKET_SIZE, 0),
        ("normal-3", 3 * BUCKET_SIZE + 7, 0),
        ("high-late", 5 * BUCKET_SIZE, 100),
        ("high-early", 4, 100),
    ]
    for job, number, priority in random.Random(53).sample(jobs, len(jobs)):
        _join(slots_dir, job, number, priority)
    assert slot_queue.waiting_jobs(slots_dir) == [
        "high-early",
        "high-late",
        "normal-0",
        "normal-1",
        "normal-2",
        "normal-3",
        "low-early",
    ]
    assert len(_buckets(slots_dir)) == 6
    assert [slot_queue.job_of(name) for name in slot_queue.head_tickets(slots_dir)] == [
        "high-early"
    ]


def test_the_head_is_found_by_listing_the_buckets_and_the_first_only(
    slots_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for number in range(0, 50 * BUCKET_SIZE, BUCKET_SIZE // 2):
        _join(slots_dir, f"job{number}", number)
    listed: list[str] = []
    listdir = os.listdir

    def counting_listdir(path: Path) -> list[str]:
        listed.append(str(path))
        return listdir(path)

    monkeypatch.setattr(slot_queue.os, "listdir", counting_listdir)
    assert [slot_queue.job_of(n) for n in slot_queue.head_tickets(slots_dir)] == ["job0", "job500"]
    assert len(listed) == 2, listed


def test_a_bucket_is_removed_once_its_last_ticket_leaves(slots_dir: Path) -> None:
    first = _join(slots_dir, "first", 1)
    second = _join(slots_dir, "second", 2)
    later = _join(slots_dir, "later", BUCKET_SIZE + 1)
    slot_queue.leave_line(slots_dir, first)
    assert len(_buckets(slots_dir)) == 2
    slot_queue.leave_line(slots_dir, second)
    assert len(_buckets(slots_dir)) == 1
    assert slot_queue.in_line(slots_dir, later)
    slot_queue.leave_line(slots_dir, later)
    assert slot_queue.line_empty(slots_dir)
    assert _buckets(slots_dir) == []


def test_a_ticket_whose_bucket_was_removed_as_it_joined_is_kept(
    slots_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Between the submitter making the bucket and writing its ticket, a dispatcher finds the
    bucket empty and removes it: the submitter makes it again."""
    make_dirs = slot_queue.make_private_dirs
    removed: list[Path] = []

    def make_then_lose(path: Path) -> None:
        make_dirs(path)
        if not removed:
            assert slot_queue.line_empty(slots_dir)  # the other process: removes it
            removed.append(path)

    monkeypatch.setattr(slot_queue, "make_private_dirs", make_then_lose)
    name = _join(slots_dir, "job", 7)
    assert removed, "the bucket was never removed"
    assert slot_queue.in_line(slots_dir, name)
    assert slot_queue.waiting_jobs(slots_dir) == ["job"]


def _join_many(slots_dir: Path, prefix: str, count: int) -> list[int]:
    numbers = [slot_queue.take_number(slots_dir) for _ in range(count)]
    for number in numbers:
        _join(slots_dir, f"{prefix}{number}", number)
    return numbers


def _clear_many(slots_dir: Path, rounds: int) -> None:
    for _ in range(rounds):
        for name in slot_queue.head_tickets(slots_dir):
            if slot_queue.job_of(name).startswith("gone"):
                slot_queue.leave_line(slots_dir, name)
        slot_queue.line_empty(slots_dir)


def test_processes_joining_and_emptying_buckets_at_once_lose_no_ticket(slots_dir: Path) -> None:
    """Submitters take numbers and join; another process drops tickets and removes empty
    buckets all the while: every number is distinct and every kept ticket waits in line."""
    _join(slots_dir, "gone", 0)
    with ProcessPoolExecutor(3) as pool:
        clearing = pool.submit(_clear_many, slots_dir, 300)
        joined = [pool.submit(_join_many, slots_dir, "kept", 300) for _ in range(2)]
        numbers = [number for future in joined for number in future.result()]
        clearing.result()
    assert len(set(numbers)) == len(numbers) == 600
    assert slot_queue.waiting_jobs(slots_dir) == [f"kept{n}" for n in sorted(numbers)]
