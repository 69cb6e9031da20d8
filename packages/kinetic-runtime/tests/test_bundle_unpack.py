"""How a code bundle is laid out in the job's directory, and what refuses it (see also
``test_artifact_checks``: members named outside the directory)."""

import io
import os
import zipfile
from pathlib import Path

import pytest

from kinetic_protocol import ConfigError
from kinetic_runtime.workspace import unpack_bundle

_TREE = {
    "pyproject.toml": b'[project]\nname = "p"\n',
    "src/pkg/__init__.py": b"",
    "src/pkg/deep/er/mod.py": b"x = 1\n" * 5000,
    "src/pkg/deep/data.bin": bytes(range(256)) * 300,
    "tests/test_pkg.py": b"def test(): pass\n",
}


def _zip(members: dict[str, bytes], compression: int = zipfile.ZIP_DEFLATED) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=compression) as archive:
        for name, data in members.items():
            archive.writestr(zipfile.ZipInfo(name), data, compress_type=compression)
    return buffer.getvalue()


def _files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


@pytest.mark.parametrize(
    "compression", [zipfile.ZIP_DEFLATED, zipfile.ZIP_STORED], ids=["deflated", "stored"]
)
def test_a_nested_tree_unpacks_with_the_same_names_and_bytes(
    tmp_path: Path, compression: int
) -> None:
    unpack_bundle(_zip(_TREE, compression), tmp_path / "work")
    assert _files(tmp_path / "work") == _TREE


def test_a_member_larger_than_one_copy_chunk_is_written_whole(tmp_path: Path) -> None:
    big = os.urandom(3 * 2**20 + 17)
    unpack_bundle(_zip({"data/big.bin": big}), tmp_path)
    assert (tmp_path / "data" / "big.bin").read_bytes() == big


def test_directories_named_in_the_bundle_are_made_even_when_empty(tmp_path: Path) -> None:
    unpack_bundle(_zip({"empty/": b"", "outer/inner/": b"", "f.py": b"x"}), tmp_path)
    assert (tmp_path / "empty").is_dir() and not any((tmp_path / "empty").iterdir())
    assert (tmp_path / "outer" / "inner").is_dir()
    assert (tmp_path / "f.py").read_bytes() == b"x"


def test_a_name_that_goes_up_and_back_in_lands_where_it_points(tmp_path: Path) -> None:
    unpack_bundle(_zip({"pkg/../top.py": b"t", "a//b/./c.py": b"c"}), tmp_path)
    assert _files(tmp_path) == {"top.py": b"t", "a/b/c.py": b"c"}


def test_a_link_in_the_directory_that_leads_out_refuses_the_bundle_before_writing(
    tmp_path: Path,
) -> None:
    """A member under a directory that is a link out of the job directory is refused, and
    the harmless members before it are not written either."""
    work, outside = tmp_path / "work", tmp_path / "outside"
    work.mkdir()
    outside.mkdir()
    (work / "escape").symlink_to(outside)
    bundle = _zip({"a_first.py": b"ok", "escape/evil.py": b"evil"})
    with pytest.raises(ConfigError, match="'escape' escapes the job directory"):
        unpack_bundle(bundle, work)
    assert list(outside.iterdir()) == []
    assert sorted(p.name for p in work.iterdir()) == ["escape"]


def test_a_link_inside_that_leads_to_a_link_out_refuses_the_bundle(tmp_path: Path) -> None:
    work, outside = tmp_path / "work", tmp_path / "outside"
    (work / "inner").mkdir(parents=True)
    outside.mkdir()
    (work / "inner" / "out").symlink_to(outside)
    (work / "alias").symlink_to(work / "inner")
    with pytest.raises(ConfigError, match="'alias/out' escapes the job directory"):
        unpack_bundle(_zip({"alias/out/evil.py": b"evil"}), work)
    assert list(outside.iterdir()) == []


def test_a_link_where_a_member_goes_is_not_written_through(tmp_path: Path) -> None:
    """A link left where a file member goes fails the unpack (the open does not follow it)."""
    work, target = tmp_path / "work", tmp_path / "elsewhere.py"
    work.mkdir()
    target.write_bytes(b"kept")
    (work / "mod.py").symlink_to(target)
    with pytest.raises(OSError, match="Too many levels of symbolic links"):
        unpack_bundle(_zip({"mod.py": b"evil"}), work)
    assert target.read_bytes() == b"kept"


@pytest.mark.parametrize("name", ["..", "../", ".", "/"], ids=["up", "up-dir", "here", "root"])
def test_a_member_naming_the_directory_itself_or_its_parent_is_refused(
    tmp_path: Path, name: str
) -> None:
    work = tmp_path / "work"
    with pytest.raises(ConfigError, match="escapes the job directory"):
        unpack_bundle(_zip({"ok.py": b"x", name: b""}), work)
    assert list(work.iterdir()) == []
