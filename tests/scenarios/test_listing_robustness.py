"""Listings and records (issue 16): one bad object never breaks a listing, stray objects in a
batch's records are ignored, and children collected and cleaned up are not called failures.
"""

import json
import logging

import batch_userfuncs as uf
import pytest
from batch_support import four_local_slots  # noqa: F401 (an autouse fixture)
from click.testing import CliRunner, Result
from scenario_support import ScenarioBackend, client_only

import kinetic
from kinetic import JobStatus
from kinetic.batch import BatchError
from kinetic_protocol import JobFailedError, JobState, layout

CLEANED = JobState(status=JobStatus.NOT_FOUND, detail="collected and cleaned up")


def _cli(backend: ScenarioBackend, *args: str) -> Result:
    from kinetic.cli import cli

    return CliRunner().invoke(
        cli, ["--backend", backend.name, *args], catch_exceptions=False, prog_name="kinetic"
    )


def _warnings(caplog: pytest.LogCaptureFixture) -> str:
    return "\n".join(r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING)


def test_a_corrupt_job_record_is_skipped_with_a_warning_naming_its_key(
    kinetic_backend: ScenarioBackend, caplog: pytest.LogCaptureFixture
) -> None:
    square = kinetic_backend.decorate()(uf.square)
    batch = square.run_async_map([1, 2])
    assert batch.results(cleanup=False) == [1, 4]
    good, bad = batch.jobs
    assert good is not None and bad is not None
    key = layout.job_record_key(bad.job_id)
    kinetic_backend.store().write(key, b'{"schema_version": 1, "job_id": ')  # truncated

    with caplog.at_level(logging.WARNING, logger="kinetic"):
        listed = {job.job_id for job in kinetic.list_jobs(backend=kinetic_backend.name)}
    assert good.job_id in listed and bad.job_id not in listed
    assert key in _warnings(caplog)

    result = _cli(kinetic_backend, "jobs", "list", "--json")
    assert result.exit_code == 0, result.stderr
    listed = {job["job_id"] for job in json.loads(result.stdout)}
    assert good.job_id in listed and bad.job_id not in listed
    assert key in result.stderr


def test_a_corrupt_batch_manifest_is_skipped_with_a_warning_naming_its_key(
    kinetic_backend: ScenarioBackend, caplog: pytest.LogCaptureFixture
) -> None:
    square = kinetic_backend.decorate()(uf.square)
    good, bad = square.run_async_map([1]), square.run_async_map([2])
    key = layout.manifest_key(bad.group_id)
    kinetic_backend.store().write(key, b"not json at all")

    with caplog.at_level(logging.WARNING, logger="kinetic"):
        listed = [b.group_id for b in kinetic.list_batches(backend=kinetic_backend.name)]
    assert listed == [good.group_id]
    assert key in _warnings(caplog)

    result = _cli(kinetic_backend, "batch", "list", "--json")
    assert result.exit_code == 0, result.stderr
    assert [b["group_id"] for b in json.loads(result.stdout)] == [good.group_id]
    assert key in result.stderr
    assert good.results(cleanup=False) == [1]


@client_only
def test_stray_objects_under_children_are_ignored_with_a_warning(
    kinetic_backend: ScenarioBackend, caplog: pytest.LogCaptureFixture
) -> None:
    square = kinetic_backend.decorate()(uf.square)
    batch = square.run_async_map([1, 2])
    assert batch.results(cleanup=False) == [1, 4]
    store = kinetic_backend.store()
    prefix = layout.children_prefix(batch.group_id)
    strays = [f"{prefix}notes.txt", f"{prefix}x-y-z.json", f"{prefix}000009-000.json"]
    for key in strays:
        store.write(key, b"{}")

    # A finished batch is read from its index, which names each input's attempt: the strays
    # are never read. Without the index (a batch of the previous layout), they are listed.
    assert kinetic.attach_batch(batch.group_id, backend=kinetic_backend.name).results(
        cleanup=False
    ) == [1, 4]
    for key in store.list(layout.index_prefix(batch.group_id)):
        store.delete(key)
    with caplog.at_level(logging.WARNING, logger="kinetic"):
        attached = kinetic.attach_batch(batch.group_id, backend=kinetic_backend.name)
        assert attached.results(cleanup=False) == [1, 4]
    assert all(key in _warnings(caplog) for key in strays), _warnings(caplog)

    status = _cli(kinetic_backend, "batch", "status", batch.group_id, "--json")
    assert status.exit_code == 0, status.stderr
    assert json.loads(status.stdout)["counts"]["succeeded"] == 2
    assert all(key in status.stderr for key in strays), status.stderr


def test_results_cleanup_cleans_failed_children_too_and_keeps_their_outcome(
    kinetic_backend: ScenarioBackend,
) -> None:
    """Spec: results(cleanup=True) deletes each child's resources and artifacts after reading
    its outcome, failed or not; the handle still returns the same outcomes afterwards."""
    step = kinetic_backend.decorate()(uf.step)
    batch = step.run_async_map([{"value": "ok"}, {"value": "bad", "fail": "boom"}])
    with pytest.raises(BatchError) as info:
        batch.results()
    ok, bad = batch.jobs
    assert ok is not None and bad is not None
    assert [job.job_id for job in info.value.failures] == [bad.job_id]
    store = kinetic_backend.store()
    assert store.list(layout.job_prefix(bad.job_id)) == [], "the failed child is cleaned up"
    assert store.list(layout.job_prefix(ok.job_id)) == []
    assert store.exists(layout.manifest_key(batch.group_id))
    again = batch.results(return_exceptions=True)
    assert again[0] == "ok" and type(again[1]) is uf.BatchUserError and str(again[1]) == "boom"
    assert batch.failures() == [bad]


@client_only
def test_a_reattached_collected_and_cleaned_batch_is_not_called_failed(
    kinetic_backend: ScenarioBackend,
) -> None:
    square = kinetic_backend.decorate()(uf.square)
    batch = square.run_async_map([1, 2, 3])
    assert batch.results() == [1, 4, 9]
    group_id = batch.group_id
    assert all(
        kinetic_backend.store().list(layout.job_prefix(job.job_id)) == []
        for job in batch.jobs
        if job is not None
    ), "results() cleans up every child"

    attached = kinetic.attach_batch(group_id, backend=kinetic_backend.name)
    assert attached.status_counts() == {"NOT_FOUND": 3}  # keys are JobStatus values
    assert attached.statuses() == [(i, JobStatus.NOT_FOUND) for i in range(3)]
    assert attached.states() == [(0, CLEANED), (1, CLEANED), (2, CLEANED)]
    assert attached.failures() == []
    # Collection is not destruction: the outcomes were kept with the batch before cleanup.
    assert attached.results() == [1, 4, 9]
    assert kinetic.attach_batch(group_id, backend=kinetic_backend.name).results() == [1, 4, 9]

    status = _cli(kinetic_backend, "batch", "status", group_id)
    assert status.exit_code == 0, status.stderr
    assert "NOT_FOUND (collected and cleaned up)  3" in status.stdout
    assert "FAILED" not in status.stdout
    document = json.loads(_cli(kinetic_backend, "batch", "status", group_id, "--json").stdout)
    assert document["counts"]["failed"] == 0 and document["counts"]["cleaned_up"] == 3
    assert {j["description"] for j in document["jobs"]} == {"NOT_FOUND (collected and cleaned up)"}

    failures = _cli(kinetic_backend, "batch", "failures", group_id)
    assert failures.exit_code == 0, failures.stderr
    assert failures.stdout.count("collected and cleaned up") == 3
    assert f"No failed inputs in batch {group_id}." in failures.stderr
    document = json.loads(_cli(kinetic_backend, "batch", "failures", group_id, "--json").stdout)
    assert document["failures"] == []
    assert [c["index"] for c in document["cleaned_up"]] == [0, 1, 2]


@client_only
def test_children_cleaned_up_without_kept_outcomes_say_so_and_are_not_failures(
    kinetic_backend: ScenarioBackend,
) -> None:
    """Outcomes kept with the batch removed by hand (or a batch cleaned by an older Kinetic):
    the children are gone with nothing to return, which is said, not called a failure."""
    square = kinetic_backend.decorate()(uf.square)
    batch = square.run_async_map([1, 2])
    assert batch.results() == [1, 4]
    store = kinetic_backend.store()
    assert store.delete_prefix(layout.collected_prefix(batch.group_id)) >= 1

    outcomes = kinetic.attach_batch(batch.group_id, backend=kinetic_backend.name).results(
        return_exceptions=True
    )
    assert all(isinstance(o, JobFailedError) for o in outcomes), outcomes
    assert all("left no result" in str(o) for o in outcomes), outcomes
    assert not any("never existed" in str(o) for o in outcomes), outcomes
