"""Stopping a batch, end to end on every scenario backend: fail-fast (with and without
cancelling running siblings) and manual cancel(), including submissions under way at that moment.

"Later inputs" are made deterministic with ``max_concurrent``: while earlier jobs are held by
a file, later inputs cannot be submitted, so a stop at that moment leaves them unsubmitted.

A job's pid (published by ``batch_userfuncs.step``) is the process running the user's code: a
local job's process, or a simulated pod's container process. Either must be gone once cancel()
has returned: the local backend kills the process group, and the gke backend waits until the
pod is deleted, which (as on a real kubelet) happens only after its container has exited.
"""

import threading
from pathlib import Path
from typing import Any

import batch_userfuncs as uf
import pytest
from batch_support import (
    batch_thread_ends,
    child_keys,
    four_local_slots,  # noqa: F401 (an autouse fixture)
    join_batch_thread,
    stored_job_ids,
)
from scenario_support import ScenarioBackend, client_only, per_child_only, pid_gone, wait_until

import kinetic
from kinetic import JobFailedError, JobHandle, JobStatus
from kinetic.batch import SkippedInputError
from kinetic.batch import submitter as submitter_module
from kinetic.batch.submitter import submit_child
from kinetic_protocol import JobRecord


def _published_pid(path: Path) -> int:
    """The pid a job wrote to ``path`` (see ``batch_userfuncs.step(create=...)``)."""
    return int(wait_until(lambda: path.exists() and path.read_text(), f"a pid in {path.name}"))


def test_fail_fast_stops_submitting_but_lets_running_siblings_finish(
    kinetic_backend: ScenarioBackend, tmp_path: Path
) -> None:
    step = kinetic_backend.decorate()(uf.step)
    started, gate = tmp_path / "started", tmp_path / "gate"
    batch = step.run_async_map(
        [
            {"value": "sibling", "create": str(started), "wait_for": str(gate)},
            {"value": "broken", "wait_for": str(started), "fail": "stop the batch"},
            {"value": "later 1"},
            {"value": "later 2"},
        ],
        max_concurrent=2,
        fail_fast=True,
    )
    join_batch_thread(batch.group_id)  # submission ends at the first failure
    assert batch.jobs[2:] == [None, None]
    sibling = batch.jobs[0]
    assert sibling is not None and sibling.status() is JobStatus.RUNNING
    assert sorted(child_keys(kinetic_backend, batch.group_id)) == [(0, 0), (1, 0)]
    attached = kinetic.attach_batch(batch.group_id, backend=kinetic_backend.name)
    assert [job is None for job in attached.jobs] == [False, False, True, True]

    gate.touch()
    outcomes = batch.results(return_exceptions=True, timeout=60)
    assert outcomes[0] == "sibling"
    assert isinstance(outcomes[1], uf.BatchUserError)
    assert all(isinstance(outcome, SkippedInputError) for outcome in outcomes[2:]), outcomes


@per_child_only
def test_fail_fast_with_cancel_running_on_fail_cancels_running_siblings(
    kinetic_backend: ScenarioBackend, tmp_path: Path
) -> None:
    step = kinetic_backend.decorate()(uf.step)
    started = tmp_path / "started"
    batch = step.run_async_map(
        [
            {"value": "sibling", "create": str(started), "wait_for": str(tmp_path / "never")},
            {"value": "broken", "wait_for": str(started), "fail": "stop the batch"},
            {"value": "later"},
        ],
        max_concurrent=2,
        fail_fast=True,
        cancel_running_on_fail=True,
    )
    sibling_pid = _published_pid(started)
    batch.wait(timeout=60)
    sibling = batch.jobs[0]
    assert sibling is not None and sibling.status() is JobStatus.NOT_FOUND
    assert pid_gone(sibling_pid), "the cancelled sibling's process is still alive"
    assert batch.jobs[2] is None
    # failures() reports FAILED children only; the cancelled one is NOT_FOUND.
    assert batch.failures() == [batch.jobs[1]]

    outcomes = batch.results(return_exceptions=True)
    assert isinstance(outcomes[0], JobFailedError)
    assert isinstance(outcomes[1], uf.BatchUserError)
    assert isinstance(outcomes[2], SkippedInputError)


@client_only
def test_cancel_running_on_fail_without_fail_fast_changes_nothing(
    kinetic_backend: ScenarioBackend, tmp_path: Path
) -> None:
    step = kinetic_backend.decorate()(uf.step)
    started, gate = tmp_path / "started", tmp_path / "gate"
    batch = step.run_async_map(
        [
            {"value": "sibling", "create": str(started), "wait_for": str(gate)},
            {"value": "broken", "wait_for": str(started), "fail": "not fatal"},
            {"value": "later"},
        ],
        max_concurrent=2,
        cancel_running_on_fail=True,
    )
    # Input 2 is submitted only after input 1's failure was seen, when a cancel would have run.
    wait_until(
        lambda: (job := batch.jobs[2]) is not None and job.status() is JobStatus.SUCCEEDED,
        "input 2 to be submitted and succeed after input 1 failed",
    )
    sibling = batch.jobs[0]
    assert sibling is not None and sibling.status() is JobStatus.RUNNING
    gate.touch()
    outcomes = batch.results(return_exceptions=True, timeout=60)
    assert outcomes[0] == "sibling" and outcomes[2] == "later"
    assert isinstance(outcomes[1], uf.BatchUserError)


@per_child_only
def test_cancel_kills_running_children_and_submits_nothing_more(
    kinetic_backend: ScenarioBackend, tmp_path: Path
) -> None:
    step = kinetic_backend.decorate()(uf.step)
    never = str(tmp_path / "never")
    markers = [tmp_path / "started-0", tmp_path / "started-1"]
    batch = step.run_async_map(
        [{"value": i, "create": str(markers[i]), "wait_for": never} for i in range(2)]
        + [{"value": 2}, {"value": 3}],
        max_concurrent=2,
    )
    pids = [_published_pid(marker) for marker in markers]
    batch.cancel()
    assert all(pid_gone(pid) for pid in pids), "a cancelled child's process is still alive"
    assert [status for _, status in batch.statuses()] == [JobStatus.NOT_FOUND] * 2
    join_batch_thread(batch.group_id)
    # Nothing is left that could submit: the children listing is final.
    assert batch.jobs[2:] == [None, None]
    assert sorted(child_keys(kinetic_backend, batch.group_id)) == [(0, 0), (1, 0)]
    outcomes = batch.results(return_exceptions=True, timeout=60)
    assert [type(outcome) for outcome in outcomes] == [
        JobFailedError,
        JobFailedError,
        SkippedInputError,
        SkippedInputError,
    ]


class HeldSubmission:
    """Holds the submission of input ``index`` (inside the submitter) until ``release``."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, index: int) -> None:
        self.entered, self.release = threading.Event(), threading.Event()

        def held_submit(backend: Any, records: Any, record: JobRecord, **kw: Any) -> Any:
            if record.group_index == index:
                self.entered.set()
                self.release.wait(60)
            return submit_child(backend, records, record, **kw)

        monkeypatch.setattr(submitter_module, "submit_child", held_submit)


def _live_jobs(backend: ScenarioBackend) -> list[str]:
    """Ids of stored jobs that are still PENDING or RUNNING."""
    return [
        job_id
        for job_id in sorted(stored_job_ids(backend))
        if kinetic.attach(job_id, backend=backend.name).status()
        in (JobStatus.PENDING, JobStatus.RUNNING)
    ]


def _is_gone(job: JobHandle | None) -> bool:
    return job is not None and job.status() is JobStatus.NOT_FOUND


@per_child_only
def test_cancel_during_a_submission_leaves_no_child_running(
    kinetic_backend: ScenarioBackend, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A submission already under way when cancel() is called must not leave a live job.

    Input 1's submission is held until cancel() has killed input 0, then let through.
    """
    held = HeldSubmission(monkeypatch, index=1)
    step = kinetic_backend.decorate()(uf.step)
    started, never = tmp_path / "started", str(tmp_path / "never")
    batch = step.run_async_map(
        [{"value": 0, "create": str(started), "wait_for": never}, {"value": 1, "wait_for": never}],
        max_concurrent=2,
    )
    try:
        assert held.entered.wait(60)
        wait_until(started.exists, "input 0 to run")
        canceller = threading.Thread(target=batch.cancel, daemon=True)
        canceller.start()
        wait_until(lambda: _is_gone(batch.jobs[0]), "cancel() to remove input 0")
    finally:
        held.release.set()
    canceller.join(timeout=60)
    assert not canceller.is_alive()
    join_batch_thread(batch.group_id)
    assert _live_jobs(kinetic_backend) == [], "a job is still running after cancel()"


@per_child_only
def test_fail_fast_cancels_a_sibling_whose_submission_was_under_way(
    kinetic_backend: ScenarioBackend, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With cancel_running_on_fail, a sibling submitted while the first failure was being
    handled is running too, and must be cancelled like the others (not run to the end).

    Input 2's submission is held until fail-fast has cancelled input 0, then let through.
    """
    held = HeldSubmission(monkeypatch, index=2)
    step = kinetic_backend.decorate()(uf.step)
    started, never = tmp_path / "started", str(tmp_path / "never")
    batch = step.run_async_map(
        [
            {"value": 0, "create": str(started), "wait_for": never},
            {"value": 1, "wait_for": str(started), "fail": "stop the batch"},
            {"value": 2, "wait_for": never},
        ],
        max_concurrent=3,
        fail_fast=True,
        cancel_running_on_fail=True,
    )
    try:
        assert held.entered.wait(60)
        wait_until(lambda: _is_gone(batch.jobs[0]), "fail-fast to cancel input 0")
    finally:
        held.release.set()
    # The submitter watches input 2 for as long as input 2 runs.
    ended = batch_thread_ends(batch.group_id)
    assert _live_jobs(kinetic_backend) == [], "a sibling kept running after fail-fast"
    assert ended
