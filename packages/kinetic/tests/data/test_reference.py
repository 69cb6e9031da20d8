"""A ``Data`` that cannot work fails where it is written, with what was wrong and what to do."""

import logging
from pathlib import Path

import pytest

from kinetic import ConfigError, Data


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


def test_the_content_hash_is_computed_once_per_object(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("one")
    data = Data(str(tmp_path))
    first = data.content_hash()
    (tmp_path / "a.txt").write_text("two")
    assert data.content_hash() == first, "a Data is a snapshot"
    assert Data(str(tmp_path)).content_hash() != first, "a new Data sees the change"


def test_a_data_pickles_with_its_snapshot(tmp_path: Path) -> None:
    import pickle

    (tmp_path / "a.txt").write_text("one")
    data = Data(str(tmp_path))
    data.content_hash()
    copy = pickle.loads(pickle.dumps(data))
    assert copy.content_hash() == data.content_hash()
    assert repr(copy) == repr(data)
