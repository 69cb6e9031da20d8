"""Per-file digests remembered across processes, keyed by what ``stat`` says of each file.

Re-submitting an unchanged 1 GiB dataset from a new process should not read 1 GiB again: a
file whose size, modification time (ns), inode and change time are what they were when it
was last hashed has the digest it had then (the same test git's index and rsync rely on).
One small msgpack file per data root under ``$KINETIC_HOME/cache/data-digests/``; a file
changed less than a second before it was hashed is not remembered, since a second change in
the same clock tick would not show in its times. A missing or unreadable cache only costs a
full read.
"""

import contextlib
import hashlib
import os
import time
from pathlib import Path

import msgspec

from kinetic.config import kinetic_home
from kinetic_runtime.private_files import make_private_dirs, write_private_atomically

__all__ = ["DigestCache"]

_RACY_NS = 1_000_000_000
_Key = tuple[int, int, int, int]
"""size, mtime_ns, inode, ctime_ns"""


class _Entry(msgspec.Struct, array_like=True):
    key: _Key
    digest: bytes


def _key(info: os.stat_result) -> _Key:
    return (info.st_size, info.st_mtime_ns, info.st_ino, info.st_ctime_ns)


class DigestCache:
    """The remembered digests of the files under one data root (relative path -> digest)."""

    def __init__(self, root: Path) -> None:
        name = hashlib.sha256(os.fsencode(root)).hexdigest()[:32]
        self._file = kinetic_home() / "cache" / "data-digests" / f"{name}.msgpack"
        self._started = time.time_ns()
        self._entries: dict[str, _Entry] = {}
        with contextlib.suppress(OSError, msgspec.DecodeError, msgspec.ValidationError):
            self._entries = msgspec.msgpack.decode(self._file.read_bytes(), type=dict[str, _Entry])
        self._fresh: dict[str, _Entry] = {}

    def get(self, relative: str, info: os.stat_result) -> bytes | None:
        entry = self._entries.get(relative)
        return entry.digest if entry is not None and entry.key == _key(info) else None

    def put(self, relative: str, info: os.stat_result, digest: bytes) -> None:
        if info.st_mtime_ns < self._started - _RACY_NS:
            self._fresh[relative] = _Entry(_key(info), digest)

    def save(self) -> None:
        """Keep what this pass hashed (files that are gone are dropped); best effort."""
        if self._fresh.keys() == self._entries.keys() and all(
            self._entries[k] == v for k, v in self._fresh.items()
        ):
            return
        with contextlib.suppress(OSError):
            make_private_dirs(self._file.parent)
            write_private_atomically(self._file, msgspec.msgpack.encode(self._fresh))
