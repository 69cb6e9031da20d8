"""``kinetic.local.job_states.abandoned``: a job whose dead submitter never put it in line is
abandoned (a resume replaces it); one a dispatcher starts while it is being looked at never is,
wherever between the looks the start falls (issue 53)."""

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from kinetic.local import job_states
from kinetic_runtime.local import claim, slot_queue
from kinetic_runtime.local.dispatch import LAUNCH_FILE, dispatch

DEAD_SUBMITTER = "2147483646:1"
"""A process identity no live process has (a pid past any this machine hands out)."""


def _published(tmp_path: Path, *, in_line: bool) -> tuple[Path, Path]:
    """A job directory as a submitter now dead published it: its ``claim`` set aside, and its
    ticket in line if ``in_line``."""
    slots_dir, job_dir = tmp_path / "slots", tmp_path / "jobs" / "job-a"
    job_dir.mkdir(parents=True)
    launch = {
        "job_id": job_dir.name,
        "slots_dir": str(slots_dir),
        "slots": 1,
        "priority": 0,
        "line_number": 0,
        "submitter": DEAD_SUBMITTER,
    }
    (job_dir / LAUNCH_FILE).write_text(json.dumps(launch))
    claim.set_claim_aside(job_dir)
    if in_line:
        slot_queue.join_line(slots_dir, slot_queue.ticket_of(launch))
    return slots_dir, job_dir


def test_a_job_never_put_in_line_by_a_dead_submitter_is_abandoned(tmp_path: Path) -> None:
    _, job_dir = _published(tmp_path, in_line=False)
    assert job_states.abandoned(job_dir)


@pytest.mark.parametrize("look", ["same_process_alive", "in_line", "unclaimed"])
def test_a_job_a_dispatcher_starts_between_the_looks_is_not_abandoned(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, look: str
) -> None:
    """The dispatcher claims the job, then takes its ticket out of line, just before
    ``abandoned`` makes the look ``look`` (if it makes it): the job runs, so it must not be
    replaced."""
    slots_dir, job_dir = _published(tmp_path, in_line=True)
    slots_held: list[int] = []

    def start(job: Path, launch: dict[str, Any], slot: int) -> bool:
        assert claim.claim(job)
        slots_held.append(os.dup(slot))
        return True

    real: Callable[..., bool] = getattr(job_states, look)

    def dispatched_first(*args: object) -> bool:
        if not slots_held:
            dispatch(slots_dir, start)
        return real(*args)

    monkeypatch.setattr(job_states, look, dispatched_first)
    try:
        assert not job_states.abandoned(job_dir)  # (a look not made needs none)
    finally:
        for fd in slots_held:
            os.close(fd)
