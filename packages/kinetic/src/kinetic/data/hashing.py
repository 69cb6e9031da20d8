"""The content hash of local data, and the list of its files, taken together in one pass.

The hash is the spec's: every file's digest is ``sha256(relative path, NUL, contents)``
(a single file's relative path is its name), and the digests are combined in sorted-walk
(depth-first) order into ``sha256("dir:" + digests)``, or ``sha256("file:" + digest)`` for a
single file, so a file never hashes like a directory holding only it. Files are hashed in
parallel (``hashlib`` releases the GIL on large updates). Symlinked directories are not
followed (a cycle would never end); symlinked files are read, so the hash is of what the job
will see. The same walk yields the files an upload sends. Digests of files unchanged since
an earlier pass (by ``stat``) come from :class:`~kinetic.data.digests.DigestCache`.
"""

import hashlib
import os
import stat
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from kinetic.data.digests import DigestCache
from kinetic_protocol import ConfigError

__all__ = ["DataFile", "Snapshot", "snapshot"]

_READ_SIZE = 1 << 20
_WORKERS = min(32, (os.cpu_count() or 1) + 4)


@dataclass(frozen=True)
class DataFile:
    """One file of local data: its ``/``-separated path below the data's root, and its stat."""

    relative: str
    path: Path
    info: os.stat_result

    @property
    def size(self) -> int:
        return self.info.st_size


@dataclass(frozen=True)
class Snapshot:
    """Local data as it was hashed: the hash, and the files it covers, in hashing order."""

    content_hash: str
    is_dir: bool
    files: tuple[DataFile, ...]

    @property
    def total_bytes(self) -> int:
        return sum(f.size for f in self.files)


def _unreadable(path: Path, label: str, why: str) -> ConfigError:
    return ConfigError(
        f"Data({label!r}): cannot read {path}: {why}. Fix it (permissions, a broken link), or "
        "move it out of the data directory, before submitting."
    )


def _walk(root: Path, label: str) -> Iterator[DataFile]:
    """Regular files under ``root`` in sorted depth-first order (symlinked dirs skipped)."""
    for directory, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames.sort()
        here = Path(directory)
        for name in sorted(filenames):
            path = here / name
            try:
                info = path.stat()  # follows a symlinked file to what it points at
            except OSError as exc:
                raise _unreadable(path, label, exc.strerror or str(exc)) from exc
            if not stat.S_ISREG(info.st_mode):
                raise _unreadable(path, label, "not a regular file (a socket, pipe or device)")
            yield DataFile(path.relative_to(root).as_posix(), path, info)


def _digest(item: DataFile, label: str, cache: DigestCache) -> bytes:
    known = cache.get(item.relative, item.info)
    if known is None:
        known = _read_digest(item, label)
    cache.put(item.relative, item.info, known)
    return known


def _read_digest(item: DataFile, label: str) -> bytes:
    digest = hashlib.sha256(item.relative.encode() + b"\0")
    try:
        with open(item.path, "rb") as file:
            while chunk := file.read(_READ_SIZE):
                digest.update(chunk)
    except OSError as exc:
        raise _unreadable(item.path, label, exc.strerror or str(exc)) from exc
    return digest.digest()


def snapshot(root: Path, label: str) -> Snapshot:
    """Hash the file or directory ``root`` (named ``label`` in errors) and list its files."""
    cache = DigestCache(root)
    if root.is_dir():
        files = tuple(_walk(root, label))
        combined = hashlib.sha256(b"dir:")
        with ThreadPoolExecutor(_WORKERS, thread_name_prefix="kinetic-hash") as pool:
            for digest in pool.map(lambda item: _digest(item, label, cache), files):
                combined.update(digest)
        cache.save()
        return Snapshot(combined.hexdigest(), True, files)
    try:
        info = root.stat()
    except OSError as exc:
        raise _unreadable(root, label, exc.strerror or str(exc)) from exc
    if not stat.S_ISREG(info.st_mode):
        raise _unreadable(root, label, "not a regular file (a socket, pipe or device)")
    single = DataFile(root.name, root, info)
    combined = hashlib.sha256(b"file:" + _digest(single, label, cache))
    cache.save()
    return Snapshot(combined.hexdigest(), False, (single,))
