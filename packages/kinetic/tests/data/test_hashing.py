"""The content hash is the spec's (two levels, type prefix, sorted walk, symlink rules), reads
only what changed since an earlier pass, and refuses data it cannot read, naming the file."""

import hashlib
import os
import socket
from pathlib import Path

import pytest

from kinetic import ConfigError
from kinetic.data.digests import DigestCache
from kinetic.data.hashing import snapshot


def _file_digest(relative: str, content: bytes) -> bytes:
    return hashlib.sha256(relative.encode() + b"\0" + content).digest()


@pytest.fixture(autouse=True)
def _home(clean_kinetic_env: Path) -> None:
    """A fresh KINETIC_HOME: the digest cache lives there."""


def test_a_directory_hash_combines_per_file_digests_in_sorted_walk_order(tmp_path: Path) -> None:
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "z.txt").write_bytes(b"Z")
    (tmp_path / "a.txt").write_bytes(b"A")
    (tmp_path / "c.txt").write_bytes(b"C")
    expected = hashlib.sha256(
        b"dir:"
        + _file_digest("a.txt", b"A")
        + _file_digest("c.txt", b"C")
        + _file_digest("b/z.txt", b"Z")
    ).hexdigest()
    result = snapshot(tmp_path, "t")
    assert result.content_hash == expected
    assert [f.relative for f in result.files] == ["a.txt", "c.txt", "b/z.txt"]


def test_a_file_never_hashes_like_a_directory_holding_only_it(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "x.bin").write_bytes(b"data")
    single = snapshot(tmp_path / "d" / "x.bin", "t")
    assert (
        single.content_hash == hashlib.sha256(b"file:" + _file_digest("x.bin", b"data")).hexdigest()
    )
    assert single.content_hash != snapshot(tmp_path / "d", "t").content_hash
    assert not single.is_dir and single.total_bytes == 4


def test_symlinked_files_count_by_content_and_symlinked_directories_are_not_followed(
    tmp_path: Path,
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "real.txt").write_text("real")
    root = tmp_path / "root"
    root.mkdir()
    (root / "link.txt").symlink_to(outside / "real.txt")
    (root / "loop").symlink_to(root)  # a cycle: must not be walked
    (root / "elsewhere").symlink_to(outside)
    result = snapshot(root, "t")
    assert [f.relative for f in result.files] == ["link.txt"]
    expected = hashlib.sha256(b"dir:" + _file_digest("link.txt", b"real")).hexdigest()
    assert result.content_hash == expected


def test_renaming_a_file_changes_the_hash(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("same")
    before = snapshot(tmp_path, "t").content_hash
    (tmp_path / "a.txt").rename(tmp_path / "b.txt")
    assert snapshot(tmp_path, "t").content_hash != before


def _age(path: Path) -> None:
    old = path.stat().st_mtime_ns - 5_000_000_000
    os.utime(path, ns=(old, old))


def test_a_later_pass_takes_the_digests_of_unchanged_files_from_the_cache(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    item = data / "a.txt"
    item.write_text("a")
    _age(item)
    snapshot(data, "t")
    cache = DigestCache(data)
    assert cache.get("a.txt", item.stat()) == _file_digest("a.txt", b"a")
    # A planted digest for the same stat is used as is: the file is not read again.
    planted = b"\x01" * 32
    cache.put("a.txt", item.stat(), planted)
    cache.save()
    assert snapshot(data, "t").content_hash == hashlib.sha256(b"dir:" + planted).hexdigest()
    item.write_text("b")  # a write changes the file's ctime: read again
    _age(item)
    expected = hashlib.sha256(b"dir:" + _file_digest("a.txt", b"b")).hexdigest()
    assert snapshot(data, "t").content_hash == expected


def test_a_file_changed_within_the_last_second_is_not_remembered(tmp_path: Path) -> None:
    """A second change in the same clock tick would not show in its times."""
    (tmp_path / "fresh.txt").write_text("now")
    snapshot(tmp_path, "t")
    assert DigestCache(tmp_path).get("fresh.txt", (tmp_path / "fresh.txt").stat()) is None


def test_a_file_that_is_not_a_regular_file_is_refused_naming_it(tmp_path: Path) -> None:
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(tmp_path / "daemon.sock"))
        with pytest.raises(ConfigError, match=r"daemon\.sock: not a regular file"):
            snapshot(tmp_path, "./set")


def test_a_broken_link_inside_the_data_is_refused_naming_it(tmp_path: Path) -> None:
    (tmp_path / "ok.txt").write_text("ok")
    (tmp_path / "dangling").symlink_to(tmp_path / "gone")
    with pytest.raises(ConfigError, match=r"Data\('./set'\): cannot read .*dangling"):
        snapshot(tmp_path, "./set")


def test_a_file_the_user_may_not_read_is_refused_before_anything_is_submitted(
    shared_dir: Path,
) -> None:
    """As a user who may not read it (a child process drops to nobody: root reads anything)."""
    root = shared_dir / "set"
    root.mkdir()
    root.chmod(0o755)
    (root / "fine.txt").write_text("fine")
    (root / "fine.txt").chmod(0o644)
    (root / "secret.bin").write_bytes(b"x")
    (root / "secret.bin").chmod(0)
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child reports through the pipe
        message = b"no error"
        try:
            if os.geteuid() == 0:
                os.setgid(65534)
                os.setuid(65534)
            snapshot(root, "./set")
        except ConfigError as exc:
            message = str(exc).encode()
        except BaseException as exc:
            message = f"unexpected {exc!r}".encode()
        os.write(write, message)
        os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as pipe:
        said = pipe.read().decode()
    os.waitpid(pid, 0)
    assert "cannot read" in said and "secret.bin" in said and "Permission denied" in said
