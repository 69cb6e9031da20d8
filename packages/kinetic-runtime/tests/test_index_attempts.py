"""A run of an array batch's index: which attempt it is, told by its pod's failure counts."""

import pytest
from runtime_jobs import JobStage

from kinetic_protocol import BatchChild, layout
from kinetic_protocol.signing import open_json
from kinetic_runtime.attempts import IndexRun, record_attempt


def test_outside_an_array_a_run_is_no_index_run(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KINETIC_INDEX_FAILURES", raising=False)
    assert IndexRun.from_env() is None


def test_counted_failures_make_the_attempt_and_its_job_id(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KINETIC_INDEX_FAILURES", "0")
    monkeypatch.setenv("KINETIC_INDEX_PREEMPTIONS", "")  # the annotation is absent at first
    monkeypatch.setenv("KINETIC_PREEMPTION_RETRIES", "1")
    first = IndexRun.from_env()
    assert first == IndexRun(attempt=0, preemptions=0, preemption_retries=1)
    assert first.job_id("train-0a1b2c3d-4") == "train-0a1b2c3d-4"
    monkeypatch.setenv("KINETIC_INDEX_FAILURES", "2")
    monkeypatch.setenv("KINETIC_INDEX_PREEMPTIONS", "1")
    again = IndexRun.from_env()
    assert again is not None
    assert again.job_id("train-0a1b2c3d-4") == "train-0a1b2c3d-4-r2"  # as a per-child retry's
    assert not again.preemptions_spent
    monkeypatch.setenv("KINETIC_INDEX_PREEMPTIONS", "2")
    spent = IndexRun.from_env()
    assert spent is not None and spent.preemptions_spent


def test_a_count_that_is_no_number_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KINETIC_INDEX_FAILURES", "two")
    with pytest.raises(ValueError, match=r"KINETIC_INDEX_FAILURES='two' is not a count"):
        IndexRun.from_env()


def test_a_retry_records_itself_as_the_client_records_one(jobs: JobStage) -> None:
    record_attempt(jobs.store, jobs.keyring, "grp-0a1b2c3d", 3, 1, "train-0a1b2c3d-3-r1")
    key = layout.child_key("grp-0a1b2c3d", 3, 1)
    child = open_json(jobs.keyring, "batch-record", key, jobs.store.read(key), BatchChild, key=key)
    assert (child.index, child.attempt, child.job_id) == (3, 1, "train-0a1b2c3d-3-r1")
    # A preempted run of the same attempt finds its record in place, and leaves it.
    written = jobs.store.read(key)
    record_attempt(jobs.store, jobs.keyring, "grp-0a1b2c3d", 3, 1, "train-0a1b2c3d-3-r1")
    assert jobs.store.read(key) == written


def test_an_index_of_a_later_array_object_is_counted_from_its_offset() -> None:
    """A batch split into Jobs of 3: index 1 of the third Job is input 7, job id ``...-7``."""
    from kinetic_runtime.main import offset_index

    assert offset_index("train-0a1b2c3d-1", 1, 6) == ("train-0a1b2c3d-7", 7)
    with pytest.raises(ValueError, match=r"--job ending in -<index> \(got --job 'train-2'"):
        offset_index("train-2", 1, 6)
    with pytest.raises(ValueError, match="needs --index"):
        offset_index("train-1", None, 6)
