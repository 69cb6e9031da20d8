"""The index a submitter writes after its completion: a reader takes the latest attempts from
its few signed parts instead of one read and one MAC per child record, and reads the child
records as before when the index does not verify or goes with another completion."""

import logging
from unittest import mock

import pytest

from kinetic.bookkeeping import index as batch_index
from kinetic.bookkeeping.records import BatchRecords
from kinetic.bookkeeping.sealed import BatchSeal
from kinetic_protocol import layout
from kinetic_runtime.stores.local import LocalStore

GROUP = "grp-0123abcd"
TOTAL = 5


@pytest.fixture
def records(store: LocalStore, seal: BatchSeal) -> BatchRecords:
    return BatchRecords(store, GROUP, seal)


def _finished_batch(records: BatchRecords, *, parts_of: int = 2) -> None:
    """Inputs 0-3 recorded (input 2 on its retry), input 4 never; completion, then index."""
    for index, attempt in [(0, 0), (1, 0), (2, 0), (2, 1), (3, 0)]:
        records.add_child(index, attempt, f"f-0123abcd-{index}")
    done = records.mark_complete(4, cancelled=False)
    with mock.patch.object(batch_index, "PART_INPUTS", parts_of):
        batch_index.write_index(records, done, records.latest_seen, TOTAL)


def _fresh(store: LocalStore, seal: BatchSeal) -> BatchRecords:
    return BatchRecords(store, GROUP, seal)


def test_a_reader_takes_the_latest_attempts_from_the_index_alone(
    store: LocalStore, seal: BatchSeal, records: BatchRecords
) -> None:
    _finished_batch(records)
    assert len(store.list(layout.index_prefix(GROUP))) == 3
    reader = _fresh(store, seal)
    with (
        mock.patch.object(batch_index, "PART_INPUTS", 2),
        mock.patch.object(reader, "_verify_children", side_effect=AssertionError("read")),
    ):
        listing = reader.listing(TOTAL, retries=1)
    assert listing.latest_attempts == {0: 0, 1: 0, 2: 1, 3: 0}


def test_a_tampered_index_part_is_refused_and_the_child_records_read_instead(
    store: LocalStore, seal: BatchSeal, records: BatchRecords, caplog: pytest.LogCaptureFixture
) -> None:
    _finished_batch(records)
    key = layout.index_key(GROUP, 1)
    sealed = store.read(key)
    assert b'"attempts":[1,0]' in sealed
    store.write(key, sealed.replace(b'"attempts":[1,0]', b'"attempts":[1,1]'))
    # A child record the index would hide: only the fallback to the records sees it.
    store.delete(layout.child_key(GROUP, 3, 0))
    reader = _fresh(store, seal)
    with (
        mock.patch.object(batch_index, "PART_INPUTS", 2),
        caplog.at_level(logging.WARNING, logger="kinetic"),
    ):
        listing = reader.listing(TOTAL, retries=1)
    assert listing.latest_attempts == {0: 0, 1: 0, 2: 1}
    assert key in caplog.text and "signature does not match" in caplog.text


def test_an_index_of_an_earlier_completion_is_not_used(
    store: LocalStore, seal: BatchSeal, records: BatchRecords
) -> None:
    _finished_batch(records)
    # A resume since: a new attempt and a new completion, with the old index still in place.
    records.add_child(4, 0, "f-0123abcd-4")
    records.mark_complete(5, cancelled=False)
    reader = _fresh(store, seal)
    with mock.patch.object(batch_index, "PART_INPUTS", 2):
        listing = reader.listing(TOTAL, retries=1)
    assert listing.latest_attempts == {0: 0, 1: 0, 2: 1, 3: 0, 4: 0}


def test_a_batch_without_an_index_is_read_from_its_child_records(
    store: LocalStore, seal: BatchSeal, records: BatchRecords
) -> None:
    for index in range(TOTAL):
        records.add_child(index, 0, f"f-0123abcd-{index}")
    records.mark_complete(TOTAL, cancelled=False)
    listing = _fresh(store, seal).listing(TOTAL, retries=0)
    assert listing.latest_attempts == dict.fromkeys(range(TOTAL), 0)
    assert not store.list(layout.index_prefix(GROUP))
