"""A batch end to end on every scenario backend: ordering, input modes, threads, observation,
waiting.

Every job is a real process (a local job, or a simulated pod). Orders between jobs are forced
with files, never sleeps.
"""

import re
import threading
from pathlib import Path

import batch_userfuncs as uf
import pytest
from batch_support import (
    batch_threads,
    four_local_slots,  # noqa: F401 (an autouse fixture)
    join_batch_thread,
)
from scenario_support import ScenarioBackend, client_only, wait_until

from kinetic import JobStatus

GROUP_ID = re.compile(r"grp-[0-9a-f]{8}")
DNS_1123_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")


def test_results_follow_input_order_or_completion_order(
    kinetic_backend: ScenarioBackend, tmp_path: Path
) -> None:
    """Input 0 cannot finish before input 1 has been collected, so completion order is 1, 0;
    ``ordered=False`` returns that order and the default returns input order."""
    step = kinetic_backend.decorate()(uf.step)
    gate = tmp_path / "gate"
    batch = step.run_async_map([{"value": "first", "wait_for": str(gate)}, {"value": "second"}])

    def open_gate_once_input_1_is_collected() -> None:
        # results() cleans a child up right after collecting it: its status becomes NOT_FOUND.
        wait_until(
            lambda: (job := batch.jobs[1]) is not None and job.status() is JobStatus.NOT_FOUND,
            "input 1 to be collected and cleaned up",
        )
        gate.touch()

    opener = threading.Thread(target=open_gate_once_input_1_is_collected, daemon=True)
    opener.start()
    assert batch.results(ordered=False, timeout=60) == ["second", "first"]
    opener.join()
    assert batch.results() == ["first", "second"]
    join_batch_thread(batch.group_id)


def test_every_child_carries_the_batch_identity(kinetic_backend: ScenarioBackend) -> None:
    square = kinetic_backend.decorate()(uf.square)
    batch = square.run_async_map([3, 1, 2], name="sweep", tags={"team": "ml", "run": "7"})
    assert GROUP_ID.fullmatch(batch.group_id)
    assert batch.name == "sweep"
    assert batch.tags == {"team": "ml", "run": "7"}
    assert batch.results() == [9, 1, 4]
    jobs = batch.jobs
    assert len(jobs) == 3
    for index, job in enumerate(jobs):
        assert job is not None
        assert (job.group_id, job.group_kind, job.group_index) == (batch.group_id, "map", index)
        assert job.attempt == 0
        assert job.func_name == "square"
        assert DNS_1123_LABEL.fullmatch(job.job_id) and len(job.job_id) <= 63
    assert len({job.job_id for job in jobs if job is not None}) == 3
    join_batch_thread(batch.group_id)


@client_only
def test_every_input_mode_calls_the_function_as_the_spec_table_says(
    kinetic_backend: ScenarioBackend,
) -> None:
    echo = kinetic_backend.decorate()(uf.echo)
    cases: dict[str, list[tuple[object, list[object]]]] = {
        "auto": [
            ({"lr": 0.1, "wd": 2}, [[], {"lr": 0.1, "wd": 2}]),
            ({"not-an-id": 1}, [[{"not-an-id": 1}], {}]),
            ({"class": 1}, [[{"class": 1}], {}]),
            ([0.1, 32], [[0.1, 32], {}]),
            ((4, 5), [[4, 5], {}]),
            (0.5, [[0.5], {}]),
        ],
        "single": [([1, 2, 3], [[[1, 2, 3]], {}]), ({"lr": 1}, [[{"lr": 1}], {}])],
        "args": [((0.1, 32), [[0.1, 32], {}])],
        "kwargs": [({"lr": 0.1}, [[], {"lr": 0.1}])],
    }
    # All four batches run at once; each is then collected in input order.
    batches = {
        mode: echo.run_async_map([item for item, _ in rows], input_mode=mode)
        for mode, rows in cases.items()
    }
    for mode, batch in batches.items():
        assert batch.results(timeout=60) == [expected for _, expected in cases[mode]], mode


@client_only
def test_an_input_that_does_not_fit_an_explicit_mode_fails_before_anything_is_stored(
    kinetic_backend: ScenarioBackend,
) -> None:
    echo = kinetic_backend.decorate()(uf.echo)
    with pytest.raises(TypeError, match=r"input 1\b") as info:
        echo.run_async_map([[1], {"a": 1}], input_mode="args")
    assert "args" in str(info.value)
    assert kinetic_backend.store().list("") == [], "a rejected batch must leave nothing behind"


@client_only
def test_unbounded_without_retries_submits_everything_before_returning(
    kinetic_backend: ScenarioBackend,
) -> None:
    square = kinetic_backend.decorate()(uf.square)
    batch = square.run_async_map([1, 2, 3], max_concurrent=None)
    assert all(job is not None for job in batch.jobs), batch.jobs
    assert batch_threads(batch.group_id) == [], "no background thread for a synchronous batch"
    assert batch.results() == [1, 4, 9]


@client_only
def test_as_completed_yields_while_later_inputs_are_still_unsubmitted(
    kinetic_backend: ScenarioBackend, tmp_path: Path
) -> None:
    """With one job at a time and input 1 held by a gate, input 2 cannot be submitted before
    the test opens the gate, yet input 0's handle is already yielded. statuses() skips the
    unsubmitted slot and status_counts() counts what statuses() reports."""
    step = kinetic_backend.decorate()(uf.step)
    gate = tmp_path / "gate"
    batch = step.run_async_map(
        [{"value": "a"}, {"value": "b", "wait_for": str(gate)}, {"value": "c"}],
        max_concurrent=1,
    )
    stream = batch.as_completed(poll_interval=0.05, timeout=60)
    first = next(stream)
    assert first.group_index == 0
    assert batch.jobs[2] is None, "the last input was submitted before the first result came"
    [submitter] = batch_threads(batch.group_id)
    assert not submitter.daemon, "the submitter must keep a script alive until it is done"

    wait_until(
        lambda: (job := batch.jobs[1]) is not None and job.status() is JobStatus.RUNNING,
        "input 1 to run",
    )
    assert batch.statuses() == [(0, JobStatus.SUCCEEDED), (1, JobStatus.RUNNING)]
    assert batch.status_counts() == {"SUCCEEDED": 1, "RUNNING": 1}

    gate.touch()
    assert [job.group_index for job in stream] == [1, 2]
    assert batch.results(cleanup=False) == ["a", "b", "c"]
    assert batch.status_counts() == {"SUCCEEDED": 3}


@client_only
def test_timeouts_raise_and_leave_the_jobs_running_until_cancelled(
    kinetic_backend: ScenarioBackend, tmp_path: Path
) -> None:
    step = kinetic_backend.decorate()(uf.step)
    gate = tmp_path / "never-opened"
    batch = step.run_async_map([{"value": i, "wait_for": str(gate)} for i in range(2)])
    with pytest.raises(TimeoutError, match=batch.group_id):
        batch.wait(timeout=0.2)
    with pytest.raises(TimeoutError, match=batch.group_id):
        batch.results(timeout=0.2)
    wait_until(
        lambda: [status for _, status in batch.statuses()] == [JobStatus.RUNNING] * 2,
        "both jobs to be running after the timeouts",
    )
    batch.cancel()
    assert [status for _, status in batch.statuses()] == [JobStatus.NOT_FOUND] * 2
    join_batch_thread(batch.group_id)
