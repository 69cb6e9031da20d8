"""Reattaching to a batch, from this process and from another one, and tearing it down."""

import json
import logging
import threading
from pathlib import Path
from typing import Any

import batch_userfuncs as uf
import pytest
from batch_support import (
    children,
    four_local_slots,  # noqa: F401 (an autouse fixture)
    join_batch_thread,
    start_script,
)
from scenario_support import ScenarioBackend, client_only, per_child_only, run_script, wait_until

import kinetic
from kinetic import JobFailedError, JobNotFoundError, JobStatus
from kinetic.batch import SkippedInputError
from kinetic.batch import submitter as submitter_module
from kinetic.batch.submitter import submit_child
from kinetic_protocol import JobRecord, layout


def test_attach_from_another_process_after_completion_gives_the_same_batch(
    kinetic_backend: ScenarioBackend, tmp_path: Path
) -> None:
    square = kinetic_backend.decorate()(uf.square)
    batch = square.run_async_map([1, 2, 3], name="grid", tags={"owner": "me"})
    assert batch.results(cleanup=False) == [1, 4, 9]

    done = run_script(
        f"""
        import json
        import kinetic

        batch = kinetic.attach_batch({batch.group_id!r}, backend={kinetic_backend.name!r})
        print(json.dumps({{
            "group_id": batch.group_id,
            "name": batch.name,
            "tags": batch.tags,
            "jobs": [job.job_id for job in batch.jobs],
            "indices": [job.group_index for job in batch.jobs],
            "results": batch.results(),
        }}))
        """,
        tmp_path / "attach",
    )
    seen = json.loads(done.stdout.splitlines()[-1])
    assert seen == {
        "group_id": batch.group_id,
        "name": "grid",
        "tags": {"owner": "me"},
        "jobs": [job.job_id for job in batch.jobs if job is not None],
        "indices": [0, 1, 2],
        "results": [1, 4, 9],
    }


@client_only
def test_attach_mid_submission_sees_the_gaps_then_collects_everything(
    kinetic_backend: ScenarioBackend, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Another process submits one job at a time, each held by its own file. Attaching while
    only input 0 is submitted gives ``None`` slots and a warning; once the files appear, the
    attached handle's background polling finds the rest and ``results()`` returns them all."""
    gates = [tmp_path / f"gate-{i}" for i in range(3)]
    process = start_script(
        tmp_path,
        f"""
            import sys
            import kinetic
            import batch_userfuncs as uf

            step = kinetic.run(**{kinetic_backend.options!r})(uf.step)
            gates = sys.argv[1:]
            batch = step.run_async_map(
                [{{"value": i, "wait_for": gate}} for i, gate in enumerate(gates)],
                max_concurrent=1,
            )
            print(batch.group_id, flush=True)
            batch.wait(timeout=120)
            """,
        *map(str, gates),
    )
    try:
        assert process.stdout is not None
        group_id = process.stdout.readline().strip()
        assert group_id.startswith("grp-"), process.communicate(timeout=30)
        wait_until(lambda: len(children(kinetic_backend, group_id)) == 1, "input 0's submission")

        with caplog.at_level(logging.WARNING, logger="kinetic"):
            attached = kinetic.attach_batch(
                group_id, backend=kinetic_backend.name, poll_interval=0.05
            )
        jobs = attached.jobs
        assert jobs[0] is not None and jobs[1:] == [None, None]
        assert any(
            record.levelno == logging.WARNING and "1 of 3" in record.getMessage()
            for record in caplog.records
        ), caplog.text

        for gate in gates:
            gate.touch()
        assert attached.results(timeout=60) == [0, 1, 2]
        _, errors = process.communicate(timeout=60)
        assert process.returncode == 0, errors
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()


@per_child_only
def test_cancel_from_another_process_stops_the_original_submitter(
    kinetic_backend: ScenarioBackend, tmp_path: Path
) -> None:
    """A script submits one job at a time; input 0 runs until cancelled. cancel() on an
    attached handle kills it, and the script submits nothing more: its wait() returns and it
    exits, with inputs 1-4 never submitted."""
    started, never = tmp_path / "started", tmp_path / "never"
    process = start_script(
        tmp_path,
        f"""
            import sys
            import kinetic
            import batch_userfuncs as uf

            step = kinetic.run(**{kinetic_backend.options!r})(uf.step)
            first = {{"value": 0, "create": {str(started)!r}, "wait_for": {str(never)!r}}}
            batch = step.run_async_map([first] + [{{"value": i}} for i in range(1, 5)],
                                       max_concurrent=1)
            print(batch.group_id, flush=True)
            batch.wait(timeout=120)
            """,
    )
    try:
        assert process.stdout is not None
        group_id = process.stdout.readline().strip()
        assert group_id.startswith("grp-"), process.communicate(timeout=30)
        wait_until(started.exists, "input 0 to run")
        kinetic.attach_batch(group_id, backend=kinetic_backend.name, poll_interval=0.05).cancel()
        _, errors = process.communicate(timeout=60)
        assert process.returncode == 0, errors
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    submitted = [layout.parse_child_key(key) for key in children(kinetic_backend, group_id)]
    assert submitted == [(0, 0)], "the original process submitted inputs after the cancel"
    outcomes = kinetic.attach_batch(group_id, backend=kinetic_backend.name).results(
        return_exceptions=True, timeout=60
    )
    assert isinstance(outcomes[0], JobFailedError)
    assert all(isinstance(outcome, SkippedInputError) for outcome in outcomes[1:]), outcomes


@client_only
def test_attach_to_an_unknown_group_raises_job_not_found(kinetic_backend: ScenarioBackend) -> None:
    with pytest.raises(JobNotFoundError, match="grp-00000000"):
        kinetic.attach_batch("grp-00000000", backend=kinetic_backend.name)


def test_results_keeps_the_manifest_and_cleanup_removes_everything(
    kinetic_backend: ScenarioBackend, tmp_path: Path
) -> None:
    step = kinetic_backend.decorate()(uf.step)
    batch = step.run_async_map(
        [
            {"value": "ok"},
            {"value": "bad", "fail": "kept for debugging"},
            {"value": "retried", "fail_first": str(tmp_path / "failed-once")},
        ],
        retries=1,
    )
    outcomes = batch.results(return_exceptions=True, timeout=60)
    assert outcomes[0] == "ok" and outcomes[2] == "retried"
    store = kinetic_backend.store()
    group_id = batch.group_id
    ok, bad, retried = batch.jobs
    assert ok is not None and bad is not None and retried is not None
    assert store.list(layout.job_prefix(ok.job_id)) == [], "a collected child is cleaned up"
    assert store.list(layout.job_prefix(bad.job_id)) == [], "a failed child is cleaned up too"
    assert store.exists(layout.manifest_key(group_id))
    attached = kinetic.attach_batch(group_id, backend=kinetic_backend.name)
    assert [job.job_id for job in attached.jobs if job] == [ok.job_id, bad.job_id, retried.job_id]

    batch.cleanup(k8s=True, gcs=True)
    assert store.list("jobs/") == [], "every attempt of every child is removed"
    assert not store.exists(layout.manifest_key(group_id))
    assert store.list(layout.group_prefix(group_id)) == []
    assert bad.status() is JobStatus.NOT_FOUND
    with pytest.raises(JobNotFoundError, match=group_id):
        kinetic.attach_batch(group_id, backend=kinetic_backend.name)


@client_only
def test_attach_while_a_retry_is_pending_waits_for_the_retry(
    kinetic_backend: ScenarioBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Attached between a failed attempt and its retry, the handle must not call the input
    failed: the original submitter is about to add attempt 1, which succeeds."""
    entered, release = threading.Event(), threading.Event()
    real_submit = submit_child

    def held_retry(backend: Any, records: Any, record: JobRecord, **kw: Any) -> Any:
        if record.attempt == 1:
            entered.set()
            release.wait(60)
        return real_submit(backend, records, record, **kw)

    monkeypatch.setattr(submitter_module, "submit_child", held_retry)
    step = kinetic_backend.decorate()(uf.step)
    # Attempt 0 fails by its id, not by a marker file it must get to write: the test is
    # about the attached handle, whatever made the first attempt fail.
    batch = step.run_async_map([{"value": "second try", "fail_attempt_0": True}], retries=1)
    try:
        assert entered.wait(60), "the retry was never submitted"
        attached = kinetic.attach_batch(
            batch.group_id, backend=kinetic_backend.name, poll_interval=0.05
        )
    finally:
        release.set()
    assert attached.results(timeout=60, cleanup=False) == ["second try"]
    assert batch.results(timeout=60) == ["second try"]


@client_only
def test_attach_with_a_poll_timeout_leaves_no_thread_that_blocks_interpreter_exit(
    kinetic_backend: ScenarioBackend, tmp_path: Path
) -> None:
    """A non-daemon thread still alive after the attached batch is done would keep a script
    from exiting until ``poll_timeout`` runs out."""
    before = set(threading.enumerate())
    step = kinetic_backend.decorate()(uf.step)
    gate = tmp_path / "gate"
    batch = step.run_async_map(
        [{"value": 0, "wait_for": str(gate)}, {"value": 1}], max_concurrent=1
    )
    wait_until(lambda: len(children(kinetic_backend, batch.group_id)) == 1, "input 0's submission")
    attached = kinetic.attach_batch(
        batch.group_id, backend=kinetic_backend.name, poll_interval=0.05, poll_timeout=600
    )
    gate.touch()
    assert attached.results(timeout=60) == [0, 1]
    join_batch_thread(batch.group_id)
    blocking = [
        thread
        for thread in threading.enumerate()
        if thread not in before and thread.is_alive() and not thread.daemon
    ]
    assert blocking == [], f"non-daemon threads left alive: {blocking}"
