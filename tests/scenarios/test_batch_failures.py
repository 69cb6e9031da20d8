"""Failures in a batch, end to end on every scenario backend: retries, BatchError, the user's own
exceptions, and inputs whose submission fails.
"""

import collections
import threading
from pathlib import Path
from typing import Any

import batch_userfuncs as uf
import pytest
from batch_support import (
    child_keys,
    four_local_slots,  # noqa: F401 (an autouse fixture)
    join_batch_thread,
    stored_job_ids,
)
from scenario_support import ScenarioBackend, client_only, per_child_only, wait_until

import kinetic
from kinetic import JobStatus, SerializationError
from kinetic.batch import BatchError, SkippedInputError
from kinetic.batch import submitter as submitter_module
from kinetic.batch.submitter import submit_child
from kinetic_protocol import JobRecord


@per_child_only
def test_retries_resubmit_a_failed_input_until_it_succeeds_or_attempts_run_out(
    kinetic_backend: ScenarioBackend, tmp_path: Path
) -> None:
    step = kinetic_backend.decorate()(uf.step)
    marker = tmp_path / "failed-once"
    batch = step.run_async_map(
        [
            {"value": "second try", "fail_first": str(marker)},
            {"value": "never", "fail": "always broken"},
            {"value": "first try"},
        ],
        retries=1,
    )
    batch.wait(timeout=60)
    assert marker.exists()
    jobs = batch.jobs
    assert [job.attempt for job in jobs if job is not None] == [1, 1, 0]
    assert sorted(child_keys(kinetic_backend, batch.group_id)) == [
        (0, 0),
        (0, 1),
        (1, 0),
        (1, 1),
        (2, 0),
    ]

    # The manifest's child records carry the attempts, so a reattached handle sees them too.
    attached = kinetic.attach_batch(batch.group_id, backend=kinetic_backend.name)
    assert [job.attempt for job in attached.jobs if job is not None] == [1, 1, 0]
    assert [job.job_id for job in attached.jobs if job is not None] == [
        job.job_id for job in jobs if job is not None
    ]

    # The first attempt of input 0 lost its backend resource but kept its artifacts.
    latest = {job.job_id for job in jobs if job is not None}
    earlier = stored_job_ids(kinetic_backend) - latest
    assert len(earlier) == 2, earlier
    for job_id in earlier:
        first_attempt = kinetic.attach(job_id, backend=kinetic_backend.name)
        assert first_attempt.attempt == 0
        assert first_attempt.status() is JobStatus.NOT_FOUND
        with pytest.raises(uf.BatchUserError):
            first_attempt.result(cleanup=False)

    with pytest.raises(BatchError) as info:
        batch.results()
    error = info.value
    assert error.group_id == batch.group_id
    assert [job.job_id for job in error.failures] == [jobs[1].job_id]
    assert error.failures[0].attempt == 1
    assert error.partial_results == ["second try", None, "first try"]
    join_batch_thread(batch.group_id)


@per_child_only
def test_a_child_that_vanishes_is_retried(kinetic_backend: ScenarioBackend, tmp_path: Path) -> None:
    """Spec: retries are triggered by FAILED *or* NOT_FOUND. Retries also need a background
    thread, even with ``max_concurrent=None``; it is non-daemon so a script waits for it."""
    step = kinetic_backend.decorate()(uf.step)
    started, gate = tmp_path / "started", tmp_path / "gate"
    batch = step.run_async_map(
        [{"value": "survived", "create": str(started), "wait_for": str(gate)}],
        max_concurrent=None,
        retries=1,
    )
    [thread] = [t for t in threading.enumerate() if t.name == f"kinetic-batch-{batch.group_id}"]
    assert not thread.daemon
    wait_until(started.exists, "the first attempt to run")
    first = batch.jobs[0]
    assert first is not None
    first.cancel()  # the job disappears from under the batch
    gate.touch()
    assert batch.results(timeout=60) == ["survived"]
    retried = batch.jobs[0]
    assert retried is not None and retried.attempt == 1 and retried.job_id != first.job_id
    join_batch_thread(batch.group_id)


@client_only
def test_batch_error_and_return_exceptions_report_the_users_own_exception(
    kinetic_backend: ScenarioBackend,
) -> None:
    step = kinetic_backend.decorate()(uf.step)
    batch = step.run_async_map([{"value": "a"}, {"value": "b", "fail": "boom"}, {"value": "c"}])
    with pytest.raises(BatchError) as info:
        batch.results()
    error = info.value
    failed_job = batch.jobs[1]
    assert failed_job is not None
    assert error.group_id == batch.group_id
    assert [job.job_id for job in error.failures] == [failed_job.job_id]
    assert error.partial_results == ["a", None, "c"]
    assert batch.group_id in str(error)

    outcomes = batch.results(return_exceptions=True)
    assert outcomes[0] == "a" and outcomes[2] == "c"
    assert type(outcomes[1]) is uf.BatchUserError
    assert str(outcomes[1]) == "boom"

    # failures() keeps naming the failed child after its backend resource is gone.
    assert batch.failures() == [failed_job]
    failed_job.cleanup(k8s=True, gcs=False)
    assert dict(batch.statuses())[1] is JobStatus.NOT_FOUND
    assert batch.failures() == [failed_job]


@client_only
def test_an_input_that_cannot_be_pickled_fails_only_its_own_submission_once(
    kinetic_backend: ScenarioBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: collections.Counter[int | None] = collections.Counter()
    real_submit = submit_child

    def counting_submit(backend: Any, records: Any, record: JobRecord, **kw: Any) -> Any:
        calls[record.group_index] += 1
        return real_submit(backend, records, record, **kw)

    monkeypatch.setattr(submitter_module, "submit_child", counting_submit)
    square = kinetic_backend.decorate()(uf.square)
    batch = square.run_async_map([2, threading.Lock(), 3], retries=2)
    batch.wait(timeout=60)
    # A reattached handle reports the submission error too, not a skipped input.
    attached = kinetic.attach_batch(batch.group_id, backend=kinetic_backend.name)
    assert list(attached.submission_failures) == [1]
    reattached = attached.results(return_exceptions=True, cleanup=False)
    assert not isinstance(reattached[1], SkippedInputError)
    assert "SerializationError" in str(reattached[1])

    outcomes = batch.results(return_exceptions=True, timeout=60)
    assert outcomes[0] == 4 and outcomes[2] == 9
    assert isinstance(outcomes[1], SerializationError)
    assert batch.jobs[1] is None
    assert list(batch.submission_failures) == [1]
    assert batch.submission_failures[1] is outcomes[1]
    assert calls == {0: 1, 2: 1}, "an unpicklable input is never submitted, nor retried"
    assert [index for index, _ in batch.statuses()] == [0, 2]
    assert batch.failures() == []

    with pytest.raises(BatchError) as info:
        batch.results()
    assert info.value.partial_results == [4, None, 9]
    assert info.value.failures == []


@client_only
def test_a_submission_error_trips_fail_fast(kinetic_backend: ScenarioBackend) -> None:
    square = kinetic_backend.decorate()(uf.square)
    batch = square.run_async_map([threading.Lock(), 1, 2], max_concurrent=1, fail_fast=True)
    outcomes = batch.results(return_exceptions=True, timeout=60)
    assert isinstance(outcomes[0], SerializationError)
    assert all(isinstance(outcome, SkippedInputError) for outcome in outcomes[1:]), outcomes
    assert batch.jobs == [None, None, None]
    assert child_keys(kinetic_backend, batch.group_id) == []


@pytest.mark.backends("local", "gke")
def test_failures_after_results_list_every_failed_child_on_the_original_and_an_attached_handle(
    kinetic_backend: ScenarioBackend,
) -> None:
    """The original collection cleans the failed child up; a handle attached afterwards
    collects it from what the batch kept, and both name it."""
    step = kinetic_backend.decorate()(uf.step)
    batch = step.run_async_map([{"value": "a"}, {"value": "b", "fail": "boom"}])
    with pytest.raises(BatchError):
        batch.results(timeout=120)
    failed_job = batch.jobs[1]
    assert failed_job is not None
    assert [job.job_id for job in batch.failures()] == [failed_job.job_id]

    attached = kinetic.attach_batch(batch.group_id, backend=kinetic_backend.name)
    with pytest.raises(BatchError) as info:
        attached.results(timeout=120)
    assert [job.job_id for job in info.value.failures] == [failed_job.job_id]
    assert [job.job_id for job in attached.failures()] == [failed_job.job_id]
    assert [job.job_id for job in batch.failures()] == [failed_job.job_id]
