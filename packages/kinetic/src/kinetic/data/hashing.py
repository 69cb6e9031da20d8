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
    top = os.fspath(root)
    for directory, dirnames, filenames in os.walk(top, followlinks=False):
        dirnames.sort()
        # Plain string paths while walking: pathlib per file costs more than the stat.
        below = os.path.relpath(directory, top).replace(os.sep, "/")
        prefix = "" if below == "." else below + "/"
        for name in sorted(filenames):
            full = os.path.join(directory, name)
            try:
                info = os.stat(full)  # follows a symlinked file to what it points at
            except OSError as exc:
                raise _unreadable(Path(full), label, exc.strerror or str(exc)) from exc
            if not stat.S_ISREG(info.st_mode):
                raise _unreadable(
                    Path(full), label, "not a regular file (a socket, pipe or device)"
                )
            yield DataFile(prefix + name, Path(full), info)


def _digests(files: tuple[DataFile, ...], label: str, cache: DigestCache) -> list[bytes]:
    """Each file's digest, in order: from the cache where its stat is unchanged (no thread
    is spent on those), else read, in parallel."""
    known = [cache.get(item.relative, item.info) for item in files]
    missing = [i for i, digest in enumerate(known) if digest is None]
    if len(missing) == 1:
        known[missing[0]] = _read_digest(files[missing[0]], label)
    elif missing:
        with ThreadPoolExecutor(_WORKERS, thread_name_prefix="kinetic-hash") as pool:
            read = pool.map(lambda i: _read_digest(files[i], label), missing)
            for i, digest in zip(missing, read, strict=True):
                known[i] = digest
    digests = [digest for digest in known if digest is not None]
    for item, digest in zip(files, digests, strict=True):
        cache.put(item.relative, item.info, digest)
    return digests


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
        for digest in _digests(files, label, cache):
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
    combined = hashlib.sha256(b"file:" + _digests((single,), label, cache)[0])
    cache.save()
    return Snapshot(combined.hexdigest(), False, (single,))
