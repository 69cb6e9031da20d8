"""A store write that fails leaves nothing half-written for readers, and says what failed."""

import errno
from pathlib import Path

import pytest

from kinetic_protocol import ObjectNotFoundError, StoreError
from kinetic_runtime.stores import LocalStore
from kinetic_testing.full_disk import full_disk


def test_a_write_that_fills_the_disk_leaves_nothing_and_names_the_key(tmp_path: Path) -> None:
    root = tmp_path / "store"
    store = LocalStore(root)
    store.write("groups/g/children/keep.json", b"written before the disk filled")
    with full_disk(root, lambda directory: directory.endswith("children")) as disk:
        with pytest.raises(StoreError) as raised:
            store.write("groups/g/children/000001-000.json", b"x" * 4096)
        with pytest.raises(StoreError):
            store.write("groups/g/children/keep.json", b"an overwrite", if_absent=False)
    assert disk.refused == ["groups/g/children", "groups/g/children"]
    error = raised.value
    assert error.key == "groups/g/children/000001-000.json"
    assert isinstance(error.cause, OSError) and error.cause.errno == errno.ENOSPC
    assert "disk is full" in str(error)
    # Readers see the old object whole and no new one; no temporary file is left behind.
    assert store.read("groups/g/children/keep.json") == b"written before the disk filled"
    with pytest.raises(ObjectNotFoundError):
        store.read("groups/g/children/000001-000.json")
    assert store.list("groups/") == ["groups/g/children/keep.json"]
    assert sorted(p.name for p in (root / "groups/g/children").iterdir()) == ["keep.json"]
