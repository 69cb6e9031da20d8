"""A batch's records are opened with its backend's keyring (``kinetic.bookkeeping.sealed``), read
again when a record names a key this process has not seen: another process rotated the keys."""

import logging
import os
from pathlib import Path

import pytest

from kinetic.bookkeeping.records import BatchRecords
from kinetic.bookkeeping.sealed import BatchSeal
from kinetic_runtime.keydir import directory_keyring, replace_directory_keyring
from kinetic_runtime.stores.local import LocalStore

GROUP = "grp-0123abcd"


def _keys() -> Path:
    return Path(os.environ["KINETIC_HOME"]) / "keys"


def _another_process(store: LocalStore) -> BatchRecords:
    """The batch's records as a process that reads the keyring afresh sees them."""
    return BatchRecords(
        store, GROUP, BatchSeal(lambda refresh: directory_keyring(_keys(), create=False))
    )


def test_a_record_signed_with_a_key_rotated_in_elsewhere_is_read_after_rereading_the_keys(
    tmp_path: Path, seal: BatchSeal
) -> None:
    store = LocalStore(tmp_path / "store")
    records = BatchRecords(store, GROUP, seal)
    records.add_child(0, 0, "job-0")  # this process has read the keyring
    replace_directory_keyring(_keys(), directory_keyring(_keys(), create=False).rotated())
    _another_process(store).add_child(0, 1, "job-0-r1")  # signed with the new key
    assert records.listing().latest_attempts == {0: 1}


def test_a_record_signed_with_a_key_the_keyring_never_held_is_left_out_naming_the_key(
    tmp_path: Path, seal: BatchSeal, caplog: pytest.LogCaptureFixture
) -> None:
    store = LocalStore(tmp_path / "store")
    records = BatchRecords(store, GROUP, seal)
    records.add_child(0, 0, "job-0")
    strange = directory_keyring(tmp_path / "someone-elses-keys", create=True)
    BatchRecords(store, GROUP, BatchSeal(lambda refresh: strange)).add_child(0, 1, "job-0-r1")
    with caplog.at_level(logging.WARNING, logger="kinetic"):
        assert records.listing().latest_attempts == {0: 0}
    assert f"signed with key {strange.current}" in caplog.text
