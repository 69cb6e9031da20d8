"""A batch whose submitter died, deterministically (local backend, real processes): where it
died is forced with ``os._exit`` inside the submitting script. Readers report the dead
submitter instead of waiting for it, and ``resume`` (or ``kinetic batch resume``) finishes the
batch from another process, creating what was recorded but never started, running nothing
twice.
"""

import threading
from pathlib import Path

import pytest
from batch_support import (
    SCENARIOS_DIR,
    died_submitting,
    dies_after_recording,
    join_batch_thread,
    start_script,
)
from batch_userfuncs import square as uf_square
from click.testing import CliRunner
from scenario_support import ScenarioBackend, run_script, wait_until

import kinetic
from kinetic import JobStatus
from kinetic.batch import SkippedInputError, SubmitterAliveError
from kinetic_protocol import JobFailedError, JobNotFoundError


@pytest.fixture
def quick_leases(monkeypatch: pytest.MonkeyPatch) -> None:
    """A dead submitter counts as gone after a second, not the default 30."""
    monkeypatch.setenv("KINETIC_BATCH_HEARTBEAT", "0.1")
    monkeypatch.setenv("KINETIC_BATCH_LEASE", "1")


def _died_after_recording(tmp_path: Path) -> tuple[str, Path]:
    """A batch of 4 whose submitter died after input 1's record, before its job existed."""
    return died_submitting(tmp_path, dies_after_recording())


def _gone(group_id: str) -> bool:
    attached = kinetic.attach_batch(group_id, backend="local")
    return attached.submission_status().gone


def test_readers_report_a_dead_submitter_and_resume_creates_what_it_recorded(
    local_backend: ScenarioBackend, tmp_path: Path, quick_leases: None
) -> None:
    group_id, runs = _died_after_recording(tmp_path)
    wait_until(lambda: _gone(group_id), "the dead submitter's lease to run out")

    attached = kinetic.attach_batch(group_id, backend="local")
    assert [job is not None for job in attached.jobs] == [True, True, False, False]
    assert dict(attached.statuses())[1] is JobStatus.NOT_FOUND
    # Nothing waits on the dead submitter, and everything says how to go on.
    attached.wait(timeout=60)
    assert [job.group_index for job in attached.as_completed(timeout=60)] == [0, 1]
    outcomes = attached.results(timeout=60, cleanup=False, return_exceptions=True)
    assert outcomes[0] == 0
    assert isinstance(outcomes[1], JobNotFoundError) and "never ran" in str(outcomes[1])
    for skipped in outcomes[2:]:
        assert isinstance(skipped, SkippedInputError), outcomes
        assert "after submitting 2 of 4 inputs" in str(skipped)
        assert f"kinetic batch resume {group_id}" in str(skipped)
    assert not (runs / "1").exists(), "input 1 never ran"

    said = attached.resume()
    assert "3 of 4 inputs to submit" in said and "1 recorded but never created" in said
    assert attached.results(timeout=60, cleanup=False) == [0, 1, 4, 9]
    recorded_1 = attached.jobs[1]
    assert recorded_1 is not None and recorded_1.attempt == 0
    assert (runs / "1").read_text().split() == [recorded_1.job_id], "created once, same id"
    assert all(len((runs / str(i)).read_text().split()) == 1 for i in range(4))
    assert "nothing to resume" in kinetic.attach_batch(group_id, backend="local").resume()


def test_resume_after_a_default_collection_runs_nothing_collected_again(
    local_backend: ScenarioBackend, tmp_path: Path, quick_leases: None
) -> None:
    """``results()`` cleans up by default: input 0's job is then gone from the backend and
    its outcome lives only among the batch's kept outcomes. A resume must take that as done,
    not as recorded but never created (which would run it again under the same id)."""
    group_id, runs = _died_after_recording(tmp_path)
    wait_until(lambda: _gone(group_id), "the dead submitter's lease to run out")
    attached = kinetic.attach_batch(group_id, backend="local")
    first = attached.results(timeout=60, return_exceptions=True)  # default cleanup=True
    assert first[0] == 0
    job_0 = attached.jobs[0]
    assert job_0 is not None and job_0.status() is JobStatus.NOT_FOUND, "cleaned up"

    said = attached.resume()
    join_batch_thread(group_id)  # a handle attached later then sees every child at once
    later = kinetic.attach_batch(group_id, backend="local")
    assert later.results(timeout=60, cleanup=False) == [0, 1, 4, 9]
    assert (runs / "0").read_text().split() == [job_0.job_id], "input 0 ran once"
    assert all(len((runs / str(i)).read_text().split()) == 1 for i in range(4))
    assert "3 of 4 inputs to submit" in said, said


def test_resume_is_refused_while_the_submitter_lives(
    local_backend: ScenarioBackend, tmp_path: Path
) -> None:
    gate = tmp_path / "gate"
    process = start_script(
        tmp_path,
        """
        import sys
        import kinetic
        import batch_userfuncs as uf

        step = kinetic.run(accelerator="cpu", backend="local")(uf.step)
        batch = step.run_async_map([{"value": 0, "wait_for": sys.argv[1]}, {"value": 1}],
                                   max_concurrent=1)
        print(batch.group_id, flush=True)
        batch.wait(timeout=60)
        """,
        str(gate),
    )
    try:
        assert process.stdout is not None
        group_id = process.stdout.readline().strip()
        attached = kinetic.attach_batch(group_id, backend="local")
        assert attached.submission_status().state == "submitting"
        with pytest.raises(SubmitterAliveError, match=rf"pid {process.pid}"):
            attached.resume()
    finally:
        gate.touch()
        process.communicate(timeout=60)
    assert process.returncode == 0
    assert kinetic.attach_batch(group_id, backend="local").results(timeout=60) == [0, 1]


def test_two_resumers_never_both_submit(
    local_backend: ScenarioBackend, tmp_path: Path, quick_leases: None
) -> None:
    group_id, runs = _died_after_recording(tmp_path)
    wait_until(lambda: _gone(group_id), "the dead submitter's lease to run out")
    handles = [kinetic.attach_batch(group_id, backend="local") for _ in range(2)]
    outcomes: list[object] = [None, None]
    start = threading.Barrier(2)

    def resume(i: int) -> None:
        start.wait()
        try:
            outcomes[i] = handles[i].resume()
        except SubmitterAliveError as refused:
            outcomes[i] = refused

    threads = [threading.Thread(target=resume, args=(i,)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    resumed = [o for o in outcomes if isinstance(o, str)]
    refused = [o for o in outcomes if isinstance(o, SubmitterAliveError)]
    assert len(resumed) == 1 and len(refused) == 1, outcomes
    winner = handles[outcomes.index(resumed[0])]
    assert winner.results(timeout=60, cleanup=False) == [0, 1, 4, 9]
    assert all(len((runs / str(i)).read_text().split()) == 1 for i in range(4))


def test_kinetic_batch_resume_from_a_shell(
    local_backend: ScenarioBackend, tmp_path: Path, quick_leases: None
) -> None:
    from kinetic.cli import cli

    group_id, _ = _died_after_recording(tmp_path)
    wait_until(lambda: _gone(group_id), "the dead submitter's lease to run out")
    status = CliRunner().invoke(cli, ["--backend", "local", "batch", "status", group_id])
    assert status.exit_code == 0, status.output
    assert "stopped at" in status.output and f"kinetic batch resume {group_id}" in status.output

    resumed = CliRunner().invoke(cli, ["--backend", "local", "batch", "resume", group_id])
    assert resumed.exit_code == 0, resumed.output
    assert f"Resumed batch {group_id}" in resumed.output
    again = CliRunner().invoke(cli, ["--backend", "local", "batch", "resume", group_id])
    assert again.exit_code == 0 and "nothing to resume" in again.output
    assert kinetic.attach_batch(group_id, backend="local").results(timeout=60) == [0, 1, 4, 9]


def test_a_single_job_whose_submitter_died_before_starting_it_says_so(
    local_backend: ScenarioBackend, tmp_path: Path, isolated_kinetic: Path
) -> None:
    """Killed after the job's directory was published, before it was put in line: the job is
    reported as never started (not PENDING forever), and its result says why."""
    run_script(
        f"""
        import os
        import sys
        sys.path.insert(0, {SCENARIOS_DIR!r})
        import kinetic
        import batch_userfuncs as uf
        import kinetic.local.backend

        kinetic.local.backend.join_line = lambda *args: os._exit(0)
        kinetic.run(accelerator="cpu", backend="local")(uf.square).run_async(3)
        """,
        tmp_path,
    )
    [job_dir] = (isolated_kinetic / "local" / "jobs").iterdir()
    job = kinetic.attach(job_dir.name, backend="local")
    state = job.status_detail()
    assert state.status is JobStatus.NOT_FOUND and "never started" in state.detail
    with pytest.raises(JobFailedError, match="never started"):
        job.result(timeout=30)


def test_a_local_job_whose_deletion_was_cut_short_is_not_found_never_pending(
    local_backend: ScenarioBackend, isolated_kinetic: Path
) -> None:
    """A deletion killed half-way (a retry deleting a failed attempt when its submitter was
    SIGKILLed) once left a directory without its state, read as PENDING forever."""
    import shutil

    job = kinetic.run(accelerator="cpu", backend="local")(uf_square).run_async(4)
    assert job.result(timeout=60, cleanup=False) == 16
    jobs = isolated_kinetic / "local" / "jobs"

    def cut_short(path: object, *args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt("the deleting process died here")

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(shutil, "rmtree", cut_short)
        with pytest.raises(KeyboardInterrupt):
            job.cancel()
    assert job.status() is JobStatus.NOT_FOUND, "the job's directory was taken away first"
    assert [p.name for p in jobs.iterdir() if not p.name.startswith(".")] == []
    later = kinetic.run(accelerator="cpu", backend="local")(uf_square).run_async(5)
    assert later.result(timeout=60) == 25  # its cleanup deletes a job directory too
    assert list(jobs.iterdir()) == [], "a later deletion removes what was left"


def test_a_submitter_replaced_by_a_newer_lease_stops_submitting(
    local_backend: ScenarioBackend, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A submitter that looked dead (a paused laptop) and was resumed elsewhere must not go
    on submitting beside the resumer once it wakes: a newer lease epoch stops it."""
    from batch_userfuncs import step

    from kinetic_protocol import SubmitterLease, layout
    from kinetic_testing.signed import seal_batch_record

    monkeypatch.setenv("KINETIC_BATCH_HEARTBEAT", "0.1")
    gate = tmp_path / "gate"
    remote = kinetic.run(accelerator="cpu", backend="local")(step)
    batch = remote.run_async_map(
        [{"value": 0, "wait_for": str(gate)}, {"value": 1}, {"value": 2}], max_concurrent=1
    )
    store = local_backend.store()
    wait_until(lambda: batch.jobs[0] is not None, "input 0's submission")
    newer = SubmitterLease(
        group_id=batch.group_id,
        epoch=1,
        owner="elsewhere",
        host="other",
        pid=1,
        started_at="2026-01-01T00:00:00+00:00",
        heartbeat_at="2026-01-01T00:00:00+00:00",
        lease_seconds=30.0,
    )
    key = layout.lease_key(batch.group_id, 1)
    store.write(key, seal_batch_record(batch._manifest.job_template, key, newer))
    try:
        join_batch_thread(batch.group_id)
    finally:
        gate.touch()
    assert [job is not None for job in batch.jobs] == [True, False, False]
    assert not store.exists(layout.completion_key(batch.group_id)), "the resumer finishes it"
