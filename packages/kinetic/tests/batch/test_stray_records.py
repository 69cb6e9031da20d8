"""Objects in a batch's record prefixes that the batch did not write are ignored, with one
warning per object naming its key (issue 16)."""

import logging
from pathlib import Path
from typing import Any

import pytest

from kinetic.batch.lease import LeaseHolder
from kinetic.bookkeeping.records import BatchRecords
from kinetic.bookkeeping.sealed import BatchSeal
from kinetic_protocol import layout
from kinetic_runtime.stores import LocalStore

GROUP = "grp-0000abcd"


def test_unknown_keys_under_children_and_errors_are_ignored_once_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, seal: BatchSeal
) -> None:
    store = LocalStore(tmp_path)
    records = BatchRecords(store, GROUP, seal)
    records.add_child(0, 0, "job-0")
    records.add_child(1, 0, "job-1")
    records.add_child(1, 1, "job-1b")
    records.add_submission_error(2, ValueError("no"))
    prefix = layout.children_prefix(GROUP)
    strays = [
        f"{prefix}notes.txt",
        f"{prefix}x-y-z.json",
        f"{prefix}1-2-3.json",
        f"{prefix}sub/000000-000.json",
        f"{layout.submission_errors_prefix(GROUP)}junk.json",
    ]
    for key in strays:
        store.write(key, b"{}" if key.endswith(".json") else b"hello")

    with caplog.at_level(logging.WARNING, logger="kinetic"):
        first = records.listing()
        beyond = f"{prefix}000007-000.json"  # an input beyond the batch's 3
        store.write(beyond, b"{}")
        strays.append(beyond)
        second = records.listing(total=3)
        third = records.listing(total=3)
    assert first.latest_attempts == second.latest_attempts == third.latest_attempts
    assert first.latest_attempts == {0: 0, 1: 1}
    assert list(first.submission_errors) == [2]
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == len(strays), warnings  # once per key, not once per listing
    for key in strays:
        assert any(key in message for message in warnings), (key, warnings)


def test_an_attempt_beyond_the_batchs_retries_is_left_out_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, seal: BatchSeal
) -> None:
    store = LocalStore(tmp_path)
    records = BatchRecords(store, GROUP, seal)
    records.add_child(0, 0, "job-0")
    records.add_child(0, 1, "job-0-r1")
    prefix = layout.children_prefix(GROUP)
    forged = [f"{prefix}000000-002.json", f"{prefix}000001-{'9' * 20}.json"]
    for key in forged:
        store.write(key, b"{}")
    with caplog.at_level(logging.WARNING, logger="kinetic"):
        listing = records.listing(total=3, retries=1)
    assert listing.latest_attempts == {0: 1}
    for key in forged:
        assert key in caplog.text


def test_cleanup_of_a_batch_with_a_forged_20_digit_attempt_finishes(
    remote: Any, fake_backend: Any, store: LocalStore, caplog: pytest.LogCaptureFixture
) -> None:
    """Cleanup walked attempts ``0..latest``: one forged child name held ``batch cleanup`` in
    a loop of 10**20 handles while its memory grew. It now deletes the attempts it finds, by
    name: the forged one costs one delete."""
    batch = remote.run_async_map([1, 2], retries=1, max_concurrent=None)
    forged = f"{layout.children_prefix(batch.group_id)}000001-{'9' * 20}.json"
    store.write(forged, b"{}")
    batch.cleanup()
    assert not store.exists(layout.manifest_key(batch.group_id))
    assert not store.exists(forged)


@pytest.mark.parametrize(
    "garbage",
    [b"\x00\xff not json", b"[1, 2]", b'{"group_id": "g", "submitted": 1e400, "finished_at": ""}'],
    ids=["bytes", "a list", "a huge count"],
)
def test_a_garbled_completion_record_is_skipped_naming_its_key(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, garbage: bytes, seal: BatchSeal
) -> None:
    """Every batch command reads the completion: a garbled one made each of them fail. It now
    reads as "not finished", so the lease decides and ``resume`` can finish the batch."""
    store = LocalStore(tmp_path)
    records = BatchRecords(store, GROUP, seal)
    records.add_child(0, 0, "job-0")
    store.write(layout.completion_key(GROUP), garbage)
    with caplog.at_level(logging.WARNING, logger="kinetic"):
        listing = records.listing(total=1)
    assert listing.complete is None
    assert listing.latest_attempts == {0: 0}
    assert layout.completion_key(GROUP) in caplog.text


@pytest.mark.parametrize(
    "digits", ["²", "٣", "\uff11", "0²"], ids=["superscript", "arabic", "wide", "mixed"]
)
def test_key_names_with_digits_other_than_ascii_are_left_out_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, seal: BatchSeal, digits: str
) -> None:
    """``lease/².json`` made every batch command fail with a ValueError (``isdigit`` takes a
    superscript, ``int`` does not); other scripts' digits read as another key's number."""
    store = LocalStore(tmp_path)
    records = BatchRecords(store, GROUP, seal)
    records.add_child(0, 0, "job-0")
    holder = LeaseHolder.first(records)
    odd = [
        f"{layout.leases_prefix(GROUP)}{digits}.json",
        f"{layout.children_prefix(GROUP)}{digits}-000.json",
        f"{layout.children_prefix(GROUP)}000001-{digits}.json",
    ]
    for key in odd:
        store.write(key, b"{}")
    with caplog.at_level(logging.WARNING, logger="kinetic"):
        lease, highest = records.leases()
        listing = records.listing(total=3, retries=3)
        attempts = records.attempt_keys()
    assert lease is not None and lease.owner == holder.lease.owner and highest == 0
    assert listing.latest_attempts == {0: 0}
    assert attempts == [(0, 0)]
    for key in odd:
        assert key in caplog.text, key


def test_an_attempt_whose_key_holds_what_does_not_verify_is_recorded_beside_it(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, seal: BatchSeal
) -> None:
    """Child records are create-only: an object planted at an attempt's key kept its true
    record out for ever, and readers (rightly) leave the planted one out."""
    store = LocalStore(tmp_path)
    records = BatchRecords(store, GROUP, seal)
    records.add_child(0, 0, "job-0")
    planted = layout.child_key(GROUP, 1, 0)
    store.write(planted, store.read(layout.child_key(GROUP, 0, 0)))  # signed for another key
    assert records.listing(total=2).latest_attempts == {0: 0}
    with caplog.at_level(logging.WARNING, logger="kinetic"):
        records.add_child(1, 0, "job-1")
        records.add_child(1, 0, "job-1")  # a resumed submission of it finds it recorded
    listing = records.listing(total=2)
    assert listing.latest_attempts == {0: 0, 1: 0}
    assert listing.unverified == {}
    assert records.attempt_keys() == [(0, 0), (1, 0)]
    assert caplog.text.count(f"Recorded attempt 0 of input 1 of batch {GROUP}") == 1
    assert len(store.list(layout.children_prefix(GROUP))) == 3
    assert store.read(planted) == store.read(layout.child_key(GROUP, 0, 0)), "it stays as it was"
