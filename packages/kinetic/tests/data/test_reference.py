"""A ``Data`` that cannot work fails where it is written, with what was wrong and what to do."""

import hashlib
import logging
import os
from pathlib import Path

import pytest

from kinetic import ConfigError, Data
from kinetic.data.digests import DigestCache


def test_a_missing_local_path_fails_at_construction_naming_it(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"'nope/x'.*no such file or directory") as caught:
        Data("nope/x")
    assert str(Path("nope/x").absolute()) in str(caught.value)
    assert isinstance(caught.value, ValueError)


def test_a_broken_symlink_is_a_missing_path(tmp_path: Path) -> None:
    (tmp_path / "link").symlink_to(tmp_path / "gone")
    with pytest.raises(ConfigError, match="no such file"):
        Data(str(tmp_path / "link"))


def test_local_paths_become_absolute_and_remote_uris_stay_as_given(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "set").mkdir()
    monkeypatch.chdir(tmp_path)
    local = Data("./set/")
    assert local.path == str(tmp_path / "set") and local.is_dir and local.is_local
    assert Data("gs://b/p/").is_dir and not Data("gs://b/p/w.bin").is_dir
    assert Data("hf://owner/name?split=train").is_dir


def test_hf_data_cannot_be_fuse_mounted() -> None:
    with pytest.raises(ConfigError, match="cannot be FUSE-mounted"):
        Data("hf://imdb?split=train", fuse=True)


@pytest.mark.parametrize(
    ("uri", "says"),
    [
        ("s3://bucket/x", "unsupported URI scheme"),
        ("gs://", "names no bucket"),
        ("gs://b/a//c", "empty, '.' or '..'"),
        ("hf://", "does not name a dataset"),
        ("hf://a/b/c", "does not name a dataset"),
        ("hf://imdb?spilt=train", "unknown query key 'spilt'"),
        ("hf://imdb?split=", "must be given once, with a value"),
    ],
)
def test_malformed_uris_are_refused_at_construction(uri: str, says: str) -> None:
    with pytest.raises(ConfigError, match=says):
        Data(uri)


@pytest.mark.parametrize(
    ("args", "kwargs"), [((3,), {}), (("gs://b/",), {"fuse": "yes"}), (("",), {})]
)
def test_wrong_types_are_type_errors_and_an_empty_path_a_config_error(
    args: tuple[object, ...], kwargs: dict[str, object]
) -> None:
    expected = ConfigError if args == ("",) else TypeError
    with pytest.raises(expected):
        Data(*args, **kwargs)  # type: ignore[arg-type]


def test_trusting_remote_code_is_for_hf_only_and_said_out_loud(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with pytest.raises(ConfigError, match="for hf:// datasets"):
        Data("gs://b/p/", hf_trust_remote_code=True)
    with caplog.at_level(logging.WARNING, logger="kinetic"):
        Data("hf://custom/repo", hf_trust_remote_code=True)
    assert "run its own Python code" in caplog.text


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A data directory apart from the test's KINETIC_HOME (where the digest cache lives)."""
    directory = tmp_path / "data"
    directory.mkdir()
    return directory


def test_a_reused_data_sees_its_files_as_they_are_now(root: Path, clean_kinetic_env: Path) -> None:
    (root / "a.txt").write_text("one")
    data = Data(str(root))
    first = data.content_hash()
    (root / "a.txt").write_text("two")
    assert data.content_hash() != first, "the same object, the new bytes"
    assert data.content_hash() == Data(str(root)).content_hash()
    (root / "b.txt").write_text("added")
    assert [f.relative for f in data.snapshot().files] == ["a.txt", "b.txt"]


def test_reusing_unchanged_data_takes_its_digests_from_the_stat_cache(
    root: Path, clean_kinetic_env: Path
) -> None:
    """The fast path: a file whose stat is unchanged is not read again (a planted digest for
    the same stat is used as is)."""
    item = root / "a.txt"
    item.write_text("one")
    old = item.stat().st_mtime_ns - 5_000_000_000  # older than the racy second
    os.utime(item, ns=(old, old))
    data = Data(str(root))
    data.content_hash()
    cache = DigestCache(root)
    planted = b"\x01" * 32
    cache.put("a.txt", item.stat(), planted)
    cache.save()
    assert data.content_hash() == hashlib.sha256(b"dir:" + planted).hexdigest()


def test_a_data_pickles_without_a_snapshot(root: Path, clean_kinetic_env: Path) -> None:
    import pickle

    (root / "a.txt").write_text("one")
    data = Data(str(root))
    data.content_hash()
    copy = pickle.loads(pickle.dumps(data))
    assert copy.content_hash() == data.content_hash()
    assert repr(copy) == repr(data)
    assert "snapshot" not in "".join(vars(copy)), "no hash of old files travels with it"
