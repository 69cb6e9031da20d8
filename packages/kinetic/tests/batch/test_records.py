"""A batch's records in a real local store: the manifest, one record per attempt, the listing."""

import logging
import os
from pathlib import Path

import msgspec
import pytest

from kinetic.bookkeeping.records import BatchRecords
from kinetic.bookkeeping.sealed import BatchSeal
from kinetic_protocol import (
    BatchChild,
    BatchManifest,
    JobNotFoundError,
    Keyring,
    PreconditionFailedError,
    SerializationError,
    layout,
)
from kinetic_runtime.keydir import directory_keyring
from kinetic_runtime.stores.local import LocalStore
from kinetic_testing.records import job_record

GROUP = "grp-0123abcd"


@pytest.fixture
def store(tmp_path: Path) -> LocalStore:
    return LocalStore(tmp_path / "store")


@pytest.fixture
def records(store: LocalStore, seal: BatchSeal) -> BatchRecords:
    return BatchRecords(store, GROUP, seal)


@pytest.fixture
def keyring() -> Keyring:
    """The local backend's keyring (the manifests' template names it)."""
    return directory_keyring(Path(os.environ["KINETIC_HOME"]) / "keys", create=True)


def _manifest(group_id: str = GROUP, total: int = 3) -> BatchManifest:
    template = job_record()
    return BatchManifest(
        group_id=group_id,
        func_name="f",
        total_expected=total,
        job_id_prefix=f"f-{group_id.removeprefix('grp-')}",
        job_template=template,
        created_at="2026-01-01T00:00:00+00:00",
        name="sweep",
        tags={"k": "v"},
        retries=2,
    )


def test_an_empty_batch_lists_nothing(records: BatchRecords) -> None:
    listing = records.listing()
    assert (listing.latest_attempts, listing.submission_errors, listing.complete) == ({}, {}, None)


def test_the_manifest_round_trips_and_is_written_only_once(
    records: BatchRecords, keyring: Keyring
) -> None:
    manifest = _manifest()
    records.write_manifest(manifest, keyring)
    assert records.read_manifest() == manifest
    with pytest.raises(PreconditionFailedError):
        records.write_manifest(_manifest(total=4), keyring)
    assert records.read_manifest().total_expected == 3


def test_a_missing_manifest_is_job_not_found_naming_the_group(records: BatchRecords) -> None:
    with pytest.raises(JobNotFoundError, match=GROUP):
        records.read_manifest()


def test_the_listing_keeps_the_latest_attempt_of_each_index(
    records: BatchRecords, store: LocalStore
) -> None:
    for index, attempt in [(0, 0), (2, 0), (0, 1), (0, 2), (5, 0), (5, 11), (5, 3)]:
        records.add_child(index, attempt, f"job-{index}-{attempt}")
    assert records.listing().latest_attempts == {0: 2, 2: 0, 5: 11}
    assert len(store.list(layout.children_prefix(GROUP))) == 7, "one record per attempt"


def test_a_child_record_that_does_not_verify_is_not_the_latest_attempt(
    records: BatchRecords, store: LocalStore, caplog: pytest.LogCaptureFixture
) -> None:
    """A store writer's copy of a genuine record under a later attempt's key, and a record
    nobody signed: counting either would have readers wait for an attempt never made."""
    records.add_child(0, 0, "job-0-0")
    copied = layout.child_key(GROUP, 0, 1)
    store.write(copied, store.read(layout.child_key(GROUP, 0, 0)))
    unsigned = layout.child_key(GROUP, 0, 2)
    child = BatchChild(group_id=GROUP, index=0, attempt=2, job_id="job-0-2", submitted_at="now")
    store.write(unsigned, msgspec.json.encode(child))
    with caplog.at_level(logging.WARNING, logger="kinetic"):
        assert records.listing(total=3, retries=2).latest_attempts == {0: 0}
    assert copied in caplog.text and unsigned in caplog.text


def test_submission_errors_and_completion_are_listed(records: BatchRecords) -> None:
    records.add_child(0, 0, "job-0")
    records.add_submission_error(1, SerializationError("Argument 0 cannot be pickled"))
    listing = records.listing()
    assert listing.complete is None
    [(index, error)] = listing.submission_errors.items()
    assert (index, error.index, error.exc_type) == (1, 1, "SerializationError")
    assert "cannot be pickled" in error.message

    records.mark_complete(1, cancelled=True)
    done = records.listing().complete
    assert done is not None
    assert (done.submitted, done.cancelled, done.group_id) == (1, True, GROUP)


def test_records_of_other_batches_are_not_listed(store: LocalStore, records: BatchRecords) -> None:
    neighbour = BatchRecords(store, "grp-0123abce", records.seal)
    neighbour.add_child(0, 4, "other")
    neighbour.add_submission_error(3, ValueError("x"))
    neighbour.mark_complete(1, cancelled=False)
    records.add_child(1, 0, "mine")
    listing = records.listing()
    assert listing.latest_attempts == {1: 0}
    assert listing.submission_errors == {}
    assert listing.complete is None


def test_delete_all_removes_this_batch_only(
    store: LocalStore, records: BatchRecords, keyring: Keyring
) -> None:
    other_group = "grp-0123abce"
    for group_id, batch in (
        (GROUP, records),
        (other_group, BatchRecords(store, other_group, records.seal)),
    ):
        batch.write_manifest(_manifest(group_id), keyring)
        batch.add_child(0, 0, "job")
        batch.add_submission_error(1, ValueError("x"))
        batch.mark_complete(1, cancelled=False)
    records.delete_all()
    assert not store.exists(layout.manifest_key(GROUP))
    assert store.list(layout.group_prefix(GROUP)) == []
    with pytest.raises(JobNotFoundError):
        records.read_manifest()
    assert store.exists(layout.manifest_key(other_group))
    assert len(store.list(layout.group_prefix(other_group))) == 3


def test_child_records_rebuild_each_attempts_handle(records: BatchRecords) -> None:
    manifest = _manifest()
    first, retry = manifest.child_record(4, 0), manifest.child_record(4, 1)
    assert first.job_id != retry.job_id
    assert (retry.group_id, retry.group_kind, retry.group_index, retry.attempt) == (
        GROUP,
        "map",
        4,
        1,
    )
    assert first.bucket_name == retry.bucket_name == "file:///store"
