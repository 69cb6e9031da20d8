"""Uploads of local data: content-addressed, the completion marker written after every file,
an interrupted upload done again, a complete one never again (and the log says so)."""

import logging
from pathlib import Path

import pytest

from kinetic import session
from kinetic.data.hashing import snapshot
from kinetic.data.upload import upload_snapshot
from kinetic_protocol import DataManifest, layout
from kinetic_protocol.records import decode_json
from kinetic_runtime.stores import LocalStore, open_store


class RecordingStore(LocalStore):
    """A local store that remembers the order of its writes."""

    def __init__(self, root: Path) -> None:
        super().__init__(root)
        self.writes: list[str] = []

    def write(self, key: str, data: bytes, *, if_absent: bool = False) -> None:
        super().write(key, data, if_absent=if_absent)
        self.writes.append(key)


@pytest.fixture
def dataset(tmp_path: Path, clean_kinetic_env: Path) -> Path:
    root = tmp_path / "dataset"
    (root / "sub").mkdir(parents=True)
    for index in range(40):
        (root / "sub" / f"part-{index:02d}.bin").write_bytes(bytes([index]) * 1000)
    (root / "index.json").write_text("{}")
    return root


def test_the_marker_is_written_after_every_file(dataset: Path, tmp_path: Path) -> None:
    store = RecordingStore(tmp_path / "store")
    taken = snapshot(dataset, "ds")
    assert upload_snapshot(store, taken, "ds") is True
    marker = layout.data_marker_key(taken.content_hash)
    assert store.writes[-1] == marker
    assert len(store.writes) == len(taken.files) + 1
    manifest = decode_json(store.read(marker), DataManifest, what=marker)
    assert (manifest.files, manifest.bytes, manifest.is_dir) == (41, 40002, True)
    prefix = layout.data_files_prefix(taken.content_hash)
    assert store.read(prefix + "sub/part-07.bin") == bytes([7]) * 1000


def test_an_upload_interrupted_before_its_marker_is_done_again(
    dataset: Path, tmp_path: Path
) -> None:
    store = RecordingStore(tmp_path / "store")
    taken = snapshot(dataset, "ds")
    prefix = layout.data_files_prefix(taken.content_hash)
    store.write(prefix + "index.json", b"{}")  # a half-made upload: some files, no marker
    store.writes.clear()
    with session.fresh():
        assert upload_snapshot(store, taken, "ds") is True
    assert len(store.writes) == len(taken.files) + 1


def test_a_complete_upload_is_a_cache_hit_that_uploads_nothing_and_says_so(
    dataset: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store = RecordingStore(tmp_path / "store")
    taken = snapshot(dataset, "ds")
    upload_snapshot(store, taken, "ds")
    store.writes.clear()
    with session.fresh(), caplog.at_level(logging.INFO, logger="kinetic.data.upload"):
        assert upload_snapshot(store, taken, "ds") is False
    assert store.writes == []
    assert "data.cached" in caplog.text and taken.content_hash[:16] in caplog.text


def test_the_same_data_is_checked_once_a_session(dataset: Path, tmp_path: Path) -> None:
    store = RecordingStore(tmp_path / "store")
    taken = snapshot(dataset, "ds")
    upload_snapshot(store, taken, "ds")
    store.read = None  # type: ignore[assignment,method-assign]  # any store access would fail
    store.exists = None  # type: ignore[assignment,method-assign]
    assert upload_snapshot(store, taken, "ds") is False


@pytest.mark.gcs
def test_a_gcs_upload_goes_through_the_transfer_manager_to_the_bucket(
    dataset: Path, gcs_bucket: str
) -> None:
    store = open_store(gcs_bucket + "/prefix")
    taken = snapshot(dataset, "ds")
    assert upload_snapshot(store, taken, "ds") is True
    prefix = layout.data_files_prefix(taken.content_hash)
    assert len(store.list(prefix)) == 41
    assert store.read(prefix + "sub/part-39.bin") == bytes([39]) * 1000
    assert store.exists(layout.data_marker_key(taken.content_hash))
