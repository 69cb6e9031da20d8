"""The outcome of a job of several hosts, read from what its hosts stored: the leader's value,
unless a worker stored a failure in the group's latest run (``kinetic.outcome``)."""

from pathlib import Path

import cloudpickle
import pytest

from kinetic.outcome import sealed_outcome
from kinetic_protocol import (
    Failed,
    HostStart,
    JobRecord,
    JobState,
    JobStatus,
    Succeeded,
    layout,
)
from kinetic_protocol.records import encode_json
from kinetic_runtime.stores.local import LocalStore
from kinetic_testing.records import job_record
from kinetic_testing.signed import seal_result

pytestmark = pytest.mark.usefixtures("clean_kinetic_env")
JOB = "job-two-nodes"


def _record(store: LocalStore) -> JobRecord:
    return job_record(job_id=JOB, bucket_name=store.uri, nodes=2)


def _start(store: LocalStore, host: int, run: int) -> None:
    start = HostStart(job_id=JOB, host=host, hosts=2, instance=f"pod-{run}", started_at="")
    store.write(layout.host_started_key(JOB, host, run), encode_json(start))


def _worker_failed(store: LocalStore, record: JobRecord, run: int) -> None:
    failed = Failed(
        job_id=JOB,
        phase="run",
        exc_type="RuntimeError",
        message=f"host 1 failed in run {run}",
        host=1,
        hosts=2,
    )
    key = layout.host_result_key(JOB, 1, run)
    store.write(key, seal_result(record, failed, kind="host-result"))


def _leader_returned(store: LocalStore, record: JobRecord, value: str) -> None:
    done = Succeeded(job_id=JOB, value=cloudpickle.dumps(value))
    store.write(layout.result_key(JOB), seal_result(record, done))


def test_a_failure_a_worker_stored_in_an_earlier_run_of_the_group_is_not_this_runs(
    tmp_path: Path,
) -> None:
    """Host 1 stored a failure (it raised when stopped), then the cluster ran the group
    again and both hosts finished: the job succeeded with the second run's value."""
    store = LocalStore(tmp_path / "store")
    record = _record(store)
    for host in (0, 1):
        _start(store, host, 0)
    _worker_failed(store, record, 0)
    for host in (0, 1):
        _start(store, host, 1)
    _leader_returned(store, record, "second run")
    outcome = sealed_outcome(record, JobState(status=JobStatus.SUCCEEDED))
    assert isinstance(outcome.envelope, Succeeded)
    assert cloudpickle.loads(outcome.envelope.value) == "second run"


@pytest.mark.parametrize("run", [0, 1])
def test_a_failure_a_worker_stored_in_the_latest_run_is_the_jobs(tmp_path: Path, run: int) -> None:
    """Run 0 is the layout every job wrote before runs were counted: it reads as before."""
    store = LocalStore(tmp_path / "store")
    record = _record(store)
    for started in range(run + 1):
        for host in (0, 1):
            _start(store, host, started)
    _worker_failed(store, record, run)
    _leader_returned(store, record, "not trusted")
    outcome = sealed_outcome(record, JobState(status=JobStatus.FAILED))
    assert isinstance(outcome.envelope, Failed)
    assert outcome.envelope.message == f"host 1 failed in run {run}"


def test_a_later_runs_failure_counts_though_no_host_claimed_that_run(tmp_path: Path) -> None:
    """A host that failed before it could claim its start in run 1 still ends that run."""
    store = LocalStore(tmp_path / "store")
    record = _record(store)
    for host in (0, 1):
        _start(store, host, 0)
    _worker_failed(store, record, 1)
    outcome = sealed_outcome(record, JobState(status=JobStatus.FAILED))
    assert isinstance(outcome.envelope, Failed)
    assert outcome.envelope.message == "host 1 failed in run 1"
