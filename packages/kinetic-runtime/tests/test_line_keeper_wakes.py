"""A freed slot wakes the line's keeper, which starts the next job; the supervisor whose job
ended forks nothing (issue 53). A supervisor forked by another carries the memory of its
parent's stacks for good, so a line of jobs each started by the one before grew by every job
before it. The spawn stands in for starting a supervisor, as in ``test_dispatch``."""

import json
import os
import threading
from pathlib import Path

from test_dispatch import Spawner, _submit

from kinetic_runtime.local import slot_queue, supervisor
from kinetic_runtime.local.dispatch import LAUNCH_FILE, dispatch
from kinetic_runtime.local.line_keeper import WAKE_FIFO, keep, wake_keeper

_NEVER = 3600.0
"""The keeper's own look for a free slot, pushed out of every test's reach: only a wake can
start a job here."""


def test_with_no_keeper_there_is_nobody_to_wake(tmp_path: Path) -> None:
    slots_dir = tmp_path / "slots"
    slots_dir.mkdir()
    assert not wake_keeper(slots_dir)  # no keeper ever ran here
    os.mkfifo(slots_dir / WAKE_FIFO, 0o600)
    assert not wake_keeper(slots_dir)  # one ran, and has gone


def test_a_woken_keeper_starts_the_next_job_on_the_slot_just_freed(tmp_path: Path) -> None:
    slots_dir = tmp_path / "slots"
    for n in range(2):
        _submit(slots_dir, f"job{n}", slots=1, at=n)
    spawn = Spawner()
    dispatch(slots_dir, spawn)
    assert spawn.started == ["job0"]
    keeper = threading.Thread(target=keep, args=(slots_dir, 1, spawn, _NEVER))
    keeper.start()
    try:
        while not wake_keeper(slots_dir):  # until the keeper reads its wakes
            assert keeper.is_alive()
        spawn.finish("job0")
        assert wake_keeper(slots_dir)
        keeper.join(timeout=120)  # a deadlock guard: unwoken, it would sleep an hour
        assert not keeper.is_alive(), "the wake did not reach the keeper"
        assert spawn.started == ["job0", "job1"]
    finally:
        spawn.finish_all()


def test_a_supervisor_whose_job_ended_leaves_the_next_start_to_the_keeper(
    tmp_path: Path,
) -> None:
    slots_dir = tmp_path / "slots"
    _submit(slots_dir, "waiting", slots=1)
    ended = slots_dir.parent / "jobs" / "ended"
    ended.mkdir()
    (ended / LAUNCH_FILE).write_text(json.dumps({"slots_dir": str(slots_dir)}))
    os.mkfifo(slots_dir / WAKE_FIFO, 0o600)
    keepers_end = os.open(slots_dir / WAKE_FIFO, os.O_RDONLY | os.O_NONBLOCK)
    try:
        supervisor._start_next(ended, supervisor.exec_runtime)
        assert os.read(keepers_end, 16) == b"\0"
    finally:
        os.close(keepers_end)
    assert slot_queue.waiting_jobs(slots_dir) == ["waiting"], "the supervisor started it"
