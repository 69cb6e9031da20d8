"""Waiting local jobs are tickets in line, started by a dispatcher onto free slots: by priority,
then submission; never more than the slots; never twice; never lost (issue 53).

The spawn here stands in for starting a supervisor: it claims the job in this process (as a
supervisor does first) and keeps the slot's lock, as a running job does, until the test frees it.
"""

import inspect
import json
import os
from pathlib import Path
from typing import Any

import pytest

from kinetic_runtime.local import claim, slot_queue, spawners
from kinetic_runtime.local.dispatch import CANCEL_MARKER, LAUNCH_FILE, dispatch
from kinetic_runtime.local.processes import process_identity


class Spawner:
    """Starts jobs by claiming them; ``running`` holds each started job's slot descriptor."""

    def __init__(self, *, claims: bool = True) -> None:
        self.running: dict[str, int] = {}
        self.started: list[str] = []
        self.claims = claims

    def __call__(self, job_dir: Path, launch: dict[str, Any], slot: int) -> bool:
        if not self.claims:
            return False  # a supervisor that died before claiming
        assert claim.claim(job_dir), f"{job_dir.name} was started twice"
        self.running[job_dir.name] = os.dup(slot)
        self.started.append(job_dir.name)
        return True

    def finish(self, job: str) -> None:
        os.close(self.running.pop(job))

    def finish_all(self) -> None:
        for job in list(self.running):
            self.finish(job)


@pytest.fixture
def slots_dir(tmp_path: Path) -> Path:
    return tmp_path / "slots"


def _submit(slots_dir: Path, job: str, *, slots: int, priority: int = 0, at: int = 0) -> Path:
    """A job directory as the client publishes it, and its ticket in line."""
    job_dir = slots_dir.parent / "jobs" / job
    job_dir.mkdir(parents=True)
    launch = {"job_id": job, "slots": slots, "priority": priority, "line_number": at}
    (job_dir / LAUNCH_FILE).write_text(json.dumps(launch))
    claim.set_claim_aside(job_dir)
    slot_queue.join_line(slots_dir, slot_queue.ticket_of(launch))
    return job_dir


def test_no_more_jobs_start_than_there_are_slots(slots_dir: Path) -> None:
    spawn = Spawner()
    for n in range(5):
        _submit(slots_dir, f"job{n}", slots=2, at=n)
    dispatch(slots_dir, spawn)
    assert spawn.started == ["job0", "job1"]
    assert slot_queue.waiting_jobs(slots_dir) == ["job2", "job3", "job4"]
    dispatch(slots_dir, spawn)  # nothing freed: nothing starts
    assert spawn.started == ["job0", "job1"]
    spawn.finish("job1")
    dispatch(slots_dir, spawn)
    assert spawn.started == ["job0", "job1", "job2"]
    spawn.finish_all()


def test_jobs_start_by_priority_then_submission_whatever_order_they_came_in(
    slots_dir: Path,
) -> None:
    spawn = Spawner()
    _submit(slots_dir, "late-normal", slots=1, at=3)
    _submit(slots_dir, "low", slots=1, priority=-100, at=1)
    _submit(slots_dir, "high", slots=1, priority=100, at=4)
    _submit(slots_dir, "early-normal", slots=1, at=2)
    assert slot_queue.waiting_jobs(slots_dir) == ["high", "early-normal", "late-normal", "low"]
    for _ in range(4):
        dispatch(slots_dir, spawn)
        spawn.finish_all()
    assert spawn.started == ["high", "early-normal", "late-normal", "low"]
    assert slot_queue.waiting_jobs(slots_dir) == []


def test_a_cancelled_or_removed_waiting_job_is_dropped_from_line_not_started(
    slots_dir: Path,
) -> None:
    spawn = Spawner()
    cancelled = _submit(slots_dir, "cancelled", slots=1, at=1)
    (cancelled / CANCEL_MARKER).touch()
    removed = _submit(slots_dir, "removed", slots=1, at=2)
    for entry in removed.iterdir():
        entry.unlink()
    removed.rmdir()
    _submit(slots_dir, "next", slots=1, at=3)
    dispatch(slots_dir, spawn)
    assert spawn.started == ["next"]
    assert slot_queue.waiting_jobs(slots_dir) == []
    spawn.finish_all()


def test_a_job_claimed_by_a_dispatcher_killed_before_it_left_the_line_is_not_started_again(
    slots_dir: Path,
) -> None:
    """Killed between starting the supervisor and removing the ticket: the job runs, and the
    next dispatcher only drops the ticket."""
    spawn = Spawner()
    job_dir = _submit(slots_dir, "claimed", slots=1, at=1)
    assert claim.claim(job_dir)
    dispatch(slots_dir, spawn)
    assert spawn.started == []
    assert slot_queue.waiting_jobs(slots_dir) == []


def test_a_job_whose_supervisor_died_before_claiming_it_stays_in_line_for_the_next(
    slots_dir: Path,
) -> None:
    _submit(slots_dir, "job", slots=1, at=1)
    dispatch(slots_dir, Spawner(claims=False))
    assert slot_queue.waiting_jobs(slots_dir) == ["job"], "the job was lost"
    spawn = Spawner()
    dispatch(slots_dir, spawn)  # the slot the dead one had was given back
    assert spawn.started == ["job"]
    spawn.finish_all()


def test_a_claim_is_won_once_and_names_the_winner_in_the_room_set_aside(tmp_path: Path) -> None:
    """The winner is named by its process identity (a pid alone may be a stranger's by the
    time it is read), written in place: a job is claimed on a full disk too."""
    claim.set_claim_aside(tmp_path)
    room = (tmp_path / claim.CLAIM_FILE).stat().st_size
    assert claim.read_claimant(tmp_path) is None
    assert claim.claim(tmp_path)
    assert not claim.claim(tmp_path)
    me = os.getpid()
    assert claim.read_claimant(tmp_path) == (me, process_identity(me))
    assert (tmp_path / claim.PID_FILE).stat().st_size == room
    assert not claim.withdraw(tmp_path)


def test_an_older_job_directorys_bare_pid_still_names_its_claimant(tmp_path: Path) -> None:
    (tmp_path / claim.PID_FILE).write_text("4321".ljust(20))
    assert claim.read_claimant(tmp_path) == (4321, "4321")


def _depth_in_child_forked_from(depth: int) -> int:
    """The stack depth a child forked ``depth`` frames deep has when it starts."""
    if depth:
        return _depth_in_child_forked_from(depth - 1)
    read_end, write_end = os.pipe()

    def report_depth() -> int:
        os.write(write_end, str(len(inspect.stack())).encode())
        return 0

    spawners.fork_from_fresh_stack(report_depth)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as pipe:
        return int(pipe.read())


def test_a_supervisor_forked_from_deep_in_a_stack_starts_with_a_shallow_one() -> None:
    """Each supervisor forks the next from inside its own stack: without a fresh stack, a
    chain of a few hundred jobs through one slot ends in ``RecursionError``."""
    assert _depth_in_child_forked_from(500) < 20
