"""A full disk under the local backend's job directories (a real tmpfs, filled to its last
byte; the store stays on another disk): a fault of the machine, never the input's.

A submission that met it is left to ``resume`` (it was recorded as the input's own error for
ever); a job it stopped before its function ran is run again once there is room, spending none
of the batch's ``retries`` (they were all spent within the seconds the disk was full); and a job
it stops for good says what could not be written where (it read "the local supervisor process
exited unexpectedly", with an empty log).
"""

from collections.abc import Iterator
from pathlib import Path

import batch_userfuncs as uf
import durability_userfuncs
import pytest
from batch_support import join_batch_thread
from click.testing import CliRunner
from scenario_support import ScenarioBackend, wait_until

import kinetic
from kinetic import FailureCause, JobStatus
from kinetic.batch import BatchHandle, SkippedInputError
from kinetic.cli import cli
from kinetic_runtime.local.slot_queue import waiting_jobs
from kinetic_testing.full_disk import Tmpfs, tmpfs


@pytest.fixture
def jobs_disk(isolated_kinetic: Path) -> Iterator[Tmpfs]:
    """The local backend's job directories (and slots) on a small disk of their own."""
    with tmpfs(isolated_kinetic / "local") as disk:
        yield disk


def test_a_submission_that_met_a_full_disk_is_left_to_resume(
    local_backend: ScenarioBackend, jobs_disk: Tmpfs
) -> None:
    square = local_backend.decorate()(uf.square)
    with jobs_disk.full():
        batch = square.run_async_map([1, 2, 3], max_concurrent=1)
        join_batch_thread(batch.group_id)
    for outcome in batch.results(timeout=60, cleanup=False, return_exceptions=True):
        assert isinstance(outcome, SkippedInputError), outcome
        assert "stopped submitting on an error: DiskFullError" in str(outcome)
    resumed = CliRunner().invoke(cli, ["--backend", "local", "batch", "resume", batch.group_id])
    assert resumed.exit_code == 0, resumed.output
    assert kinetic.attach_batch(batch.group_id, backend="local").results(timeout=60) == [1, 4, 9]


def _one_waiting_for_the_slot(
    backend: ScenarioBackend, disk: Tmpfs, runs: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[BatchHandle, Path, Path]:
    """A batch of one input whose job waits for the one slot, which another job holds until
    ``gate`` exists: its runtime starts only once the gate opens. Returns the batch, the gate,
    and the input's job directory.

    The input's code is new to this machine, as if from another project: a job whose bundle
    was unpacked before writes nothing to start (its tree is overlaid), so a full disk would
    not stop it. The tree the holder made is moved aside (the holder's overlay, made from the
    directory itself, keeps it)."""
    monkeypatch.setenv("KINETIC_LOCAL_SLOTS", "1")
    gate = runs / "gate"
    traced = backend.decorate()(durability_userfuncs.traced)
    traced.run_async(index=9, runs=str(runs), wait_for=str(gate))
    wait_until((runs / "9").exists, "the job holding the slot to run")
    (disk.path / "bundles").rename(disk.path / "bundles-of-the-holder")
    batch = traced.run_async_map([{"index": 0, "runs": str(runs)}])
    wait_until(lambda: batch.jobs[0] is not None, "the input's submission")
    job = batch.jobs[0]
    assert job is not None
    job_dir = disk.path / "jobs" / job.job_id
    # It waits in line, a record with its room set aside (issue 53: no process waits).
    wait_until(lambda: job.job_id in waiting_jobs(disk.path / "slots"), "it to wait in line")
    return batch, gate, job_dir


def _termination_note(job_dir: Path) -> str:
    note = job_dir / "termination.log"
    return note.read_text().strip() if note.exists() else ""


def test_a_job_a_full_disk_stopped_runs_again_once_there_is_room_spending_no_retry(
    local_backend: ScenarioBackend,
    jobs_disk: Tmpfs,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    batch, gate, second = _one_waiting_for_the_slot(local_backend, jobs_disk, tmp_path, monkeypatch)
    job = batch.jobs[0]
    assert job is not None
    with jobs_disk.full():
        gate.touch()
        wait_until(
            lambda: (
                "No space left on device" in _termination_note(second) or job.status().is_terminal
            ),
            "the input's runtime to meet the full disk",
        )
    wait_until(lambda: job.status().is_terminal, "the input to end")
    # Run again from a fresh start: what the run the disk stopped unpacked, and its overlay's
    # directory, were removed, so the second run overlaid its code.
    assert list((second / "work").iterdir()) == []
    assert batch.results(timeout=60) == [0]  # retries=0: a spent retry would fail it
    assert [job.attempt for job in batch.jobs if job is not None] == [0]
    assert len((tmp_path / "0").read_text().split()) == 1, "its function ran once"


def test_a_job_a_full_disk_stopped_for_good_says_what_it_could_not_write_where(
    local_backend: ScenarioBackend,
    jobs_disk: Tmpfs,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("KINETIC_LOCAL_DISK_FULL_RETRIES", "0")
    batch, gate, second = _one_waiting_for_the_slot(local_backend, jobs_disk, tmp_path, monkeypatch)
    with jobs_disk.full():
        gate.touch()
        job = batch.jobs[0]
        assert job is not None
        wait_until(lambda: job.status() is JobStatus.FAILED, "the input to fail")
        state = job.status_detail()
    said = f"No space left on device while in phase unpack, writing under {second}/work"
    assert state.detail.startswith(said), state
    assert state.cause is FailureCause.INFRASTRUCTURE
    failure = job.failure()
    assert failure is not None and failure.cause is FailureCause.INFRASTRUCTURE
    assert "No space left on device" in failure.reason
