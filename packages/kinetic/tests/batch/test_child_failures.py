"""Why each child of a batch ended without a value (``kinetic.batch.causes``), read from what
a collection that cleaned the children up kept with the batch."""

from pathlib import Path

import cloudpickle

from kinetic.batch.causes import child_failures, failed_children
from kinetic.bookkeeping.kept import CLEANED_UP
from kinetic.bookkeeping.records import BatchRecords
from kinetic.bookkeeping.sealed import BatchSeal
from kinetic.jobs import JobHandle
from kinetic_protocol import (
    AttemptFailure,
    BatchManifest,
    CollectedFailure,
    CollectedOutcome,
    FailureCause,
    JobState,
    JobStatus,
    Succeeded,
)
from kinetic_runtime.stores.local import LocalStore
from kinetic_testing.records import job_record
from kinetic_testing.signed import seal_result

GROUP = "grp-0123abcd"
CLEANED = JobState(status=JobStatus.NOT_FOUND, detail=CLEANED_UP)


def _manifest(store: LocalStore) -> BatchManifest:
    template = job_record(bucket_name=store.uri)
    return BatchManifest(
        group_id=GROUP,
        func_name="f",
        total_expected=2,
        job_id_prefix="f-0123abcd",
        job_template=template,
        created_at="2026-01-01T00:00:00+00:00",
        retries=1,
    )


def test_a_kept_failure_summary_is_the_failure_of_its_own_attempt_only(
    tmp_path: Path, seal: BatchSeal
) -> None:
    """Input 0 ran out of memory, then its retry succeeded; input 1 ran out of memory once.
    Both were collected and cleaned up: input 0's retry is not charged with its first
    attempt's OOM."""
    store = LocalStore(tmp_path / "store")
    manifest = _manifest(store)
    records = BatchRecords(store, GROUP, seal)
    oom = [
        CollectedFailure(
            index=index,
            job_id=manifest.child_job_id(index, 0),
            failure=AttemptFailure(cause=FailureCause.OOM, reason="OOMKilled, exit 137", attempt=0),
        )
        for index in (0, 1)
    ]
    records.add_collected_failures(oom)
    retry = manifest.child_record(0, 1)
    success = seal_result(retry, Succeeded(job_id=retry.job_id, value=cloudpickle.dumps(0)))
    records.add_collected([CollectedOutcome(index=0, job_id=retry.job_id, envelope=success)])

    jobs = [JobHandle.from_record(retry), JobHandle.from_record(manifest.child_record(1, 0))]
    states = [(0, CLEANED), (1, CLEANED)]
    assert child_failures(jobs, states, records) == {1: oom[1].failure}
    assert failed_children(jobs, states, records) == [jobs[1]]
