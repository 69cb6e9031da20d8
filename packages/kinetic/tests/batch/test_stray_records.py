"""Objects in a batch's record prefixes that the batch did not write are ignored, with one
warning per object naming its key (issue 16)."""

import logging
from pathlib import Path

import pytest

from kinetic.batch.records import BatchRecords
from kinetic_protocol import layout
from kinetic_runtime.stores import LocalStore

GROUP = "grp-0000abcd"


def test_unknown_keys_under_children_and_errors_are_ignored_once_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store = LocalStore(tmp_path)
    records = BatchRecords(store, GROUP)
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
