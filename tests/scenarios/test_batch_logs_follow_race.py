"""Following a batch's output while a child's record exists but its job does not yet.

A child's record is written before its backend resource is created, so for a moment (longer
on a loaded machine) the child is NOT_FOUND. Following it then ended its follower at once and
never looked at it again: its lines were lost (the flaky ``test_following_a_batch_picks_up_
children_as_they_start_and_ends_with_it`` in CI, issue 28). Here that moment is held open with
events, on the local backend's real processes, instead of being left to load.
"""

import threading
from collections.abc import Mapping, Sequence
from pathlib import Path

import batch_userfuncs as uf
import pytest
from batch_support import four_local_slots  # noqa: F401 (an autouse fixture)
from scenario_support import ScenarioBackend

from kinetic.local.backend import LocalBackend
from kinetic_protocol import NO_ENV, JobRecord, JobState, JobStatus

_GUARD_S = 60.0
"""Only a guard against a hung test."""


@pytest.mark.parametrize("failed", [False, True], ids=["everything", "failed-only"])
def test_a_child_followed_before_its_job_exists_is_followed_once_it_does(
    local_backend: ScenarioBackend,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    failed: bool,
) -> None:
    recorded, looked, release = threading.Event(), threading.Event(), threading.Event()
    follower_thread: list[threading.Thread] = []
    real_submit, real_statuses = LocalBackend.submit, LocalBackend.statuses

    def held_submit(
        self: LocalBackend, record: JobRecord, *, env: Mapping[str, str] = NO_ENV
    ) -> None:
        recorded.set()  # its child record is written; its job is not created yet
        assert release.wait(_GUARD_S), "the follower never looked at the child"
        real_submit(self, record, env=env)

    def watched_statuses(self: LocalBackend, records: Sequence[JobRecord]) -> dict[str, JobState]:
        states = real_statuses(self, records)
        if threading.current_thread() in follower_thread and any(
            state.status is JobStatus.NOT_FOUND for state in states.values()
        ):
            looked.set()  # the follower saw the child while it did not exist
            release.set()
        return states

    monkeypatch.setattr(LocalBackend, "submit", held_submit)
    monkeypatch.setattr(LocalBackend, "statuses", watched_statuses)

    say = local_backend.decorate()(uf.say)
    batch = say.run_async_map([{"name": "early", "fail": failed}])
    assert recorded.wait(_GUARD_S), "the child was never submitted"
    seen: list[str] = []
    follower = threading.Thread(
        target=lambda: seen.extend(batch.log_lines(follow=True, failed=failed))
    )
    follower_thread.append(follower)
    follower.start()
    follower.join(timeout=_GUARD_S * 2)
    assert not follower.is_alive(), "following ends once the batch has settled"
    assert looked.is_set(), "the follower looked at the child before its job existed"
    if failed:
        assert "[0] failed: batch_userfuncs.BatchUserError: early fails\n" in seen, seen
    else:
        printed = [line for line in seen if not line.startswith("[0] [kinetic] ")]
        assert printed == ["[0] hello from early\n", "[0] goodbye from early\n"], seen
