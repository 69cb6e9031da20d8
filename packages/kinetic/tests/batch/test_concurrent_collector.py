"""A batch collected by another process at the same time: a child that process collected and
cleaned up is settled, never retried by a submitter still watching (inputs ran twice), and
is read from the outcomes kept with the batch by a collection that polled it just before."""

import threading
from collections.abc import Sequence
from typing import Any

import pytest

from kinetic.bookkeeping.records import BatchRecords
from kinetic_protocol import CollectedOutcome, JobRecord, JobState, JobStatus, layout
from kinetic_runtime.stores.local import LocalStore


def test_a_child_collected_and_cleaned_up_elsewhere_is_not_retried(
    remote: Any, fake_backend: Any, store: LocalStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    shown: dict[str, JobStatus] = {}  # what the backend reports of the first attempt

    def status(record: JobRecord) -> JobStatus:
        if record.attempt:
            return JobStatus.SUCCEEDED  # a retry, if one were made, ends at once
        return shown.get(record.job_id, JobStatus.RUNNING)

    def statuses(records: Sequence[JobRecord]) -> dict[str, JobState]:
        return {record.job_id: JobState(status=status(record)) for record in records}

    submitted = threading.Event()
    submit = fake_backend.submit

    def submit_and_say(record: JobRecord, **kwargs: Any) -> None:
        submit(record, **kwargs)
        submitted.set()

    monkeypatch.setattr(fake_backend, "statuses", statuses)
    monkeypatch.setattr(fake_backend, "submit", submit_and_say)
    batch = remote.run_async_map([5], retries=2, max_concurrent=1)
    assert submitted.wait(30)
    [record] = fake_backend.submitted

    # What another process's results(cleanup=True) leaves: the outcome kept with the batch,
    # the child's own records deleted, its resource gone.
    sealed = store.read(layout.result_key(record.job_id))
    kept = CollectedOutcome(index=0, job_id=record.job_id, envelope=sealed)
    BatchRecords(store, batch.group_id, batch._records.seal).add_collected([kept])
    store.delete_prefix(layout.job_prefix(record.job_id))
    shown[record.job_id] = JobStatus.NOT_FOUND

    batch.wait_submitted(timeout=60)
    assert [r.job_id for r in fake_backend.submitted] == [record.job_id], "input 0 ran twice"
    assert batch.results(timeout=60, cleanup=False) == [5]


def test_a_child_another_collection_cleaned_up_after_this_ones_poll_is_read_from_the_batch(
    remote: Any, fake_backend: Any, store: LocalStore
) -> None:
    """This collection saw the child SUCCEEDED; another kept its outcome and deleted it before
    this one read it. That read used to fail as "ended SUCCEEDED without storing a result"."""
    batch = remote.run_async_map([5], max_concurrent=None)  # submitted before it returns
    [record] = fake_backend.submitted
    sealed = store.read(layout.result_key(record.job_id))
    kept = CollectedOutcome(index=0, job_id=record.job_id, envelope=sealed)
    BatchRecords(store, batch.group_id, batch._records.seal).add_collected([kept])
    store.delete_prefix(layout.job_prefix(record.job_id))  # the backend still says SUCCEEDED

    assert batch.results(timeout=60, cleanup=False) == [5]
