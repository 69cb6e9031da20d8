"""Disks that fill up.

:func:`full_disk` is one for a :class:`~kinetic_runtime.stores.local.LocalStore` in this
process: writes into chosen directories run out of space half-way through, as a real full disk
makes them. It stands in for the ``os`` module inside the local store only, so the store's own
code runs (its temporary file, its cleanup, its error), and nothing else is affected.

:func:`tmpfs` is a real one, for what other processes write (a local job's supervisor and
runtime): a small ``tmpfs`` mounted at a directory, which :meth:`Tmpfs.full` fills to its last
byte and frees again. Mounting needs root (``CAP_SYS_ADMIN``); without it the test is skipped,
saying so.
"""

from __future__ import annotations

import errno
import os
import subprocess
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import kinetic_runtime.stores.local as local_store

__all__ = ["FullDisk", "Tmpfs", "full_disk", "tmpfs"]


class _HalfWritten:
    """A file that takes half of what it is given, then reports the disk full."""

    def __init__(self, file: Any) -> None:
        self._file = file

    def write(self, data: bytes) -> int:
        self._file.write(data[: len(data) // 2])
        self._file.flush()
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    def __enter__(self) -> _HalfWritten:
        return self

    def __exit__(self, *exc: object) -> None:
        self._file.close()


class FullDisk:
    """``os`` as the local store sees it while the disk is full for some directories."""

    def __init__(self, root: Path, full: Callable[[str], bool]) -> None:
        self.root = root
        self.full = full
        """Given a directory (relative to the store root, ``/``-separated): is it full?"""
        self.refused: list[str] = []
        self._paths: dict[int, str] = {}

    def __getattr__(self, name: str) -> Any:
        return getattr(os, name)

    def open(self, path: Any, flags: int, mode: int = 0o777, *args: Any, **kwargs: Any) -> int:
        fd = os.open(path, flags, mode, *args, **kwargs)
        if flags & (os.O_WRONLY | os.O_RDWR):
            self._paths[fd] = self._directory(path, kwargs.get("dir_fd"))
        return fd

    def fdopen(self, fd: int, *args: Any, **kwargs: Any) -> Any:
        file = os.fdopen(fd, *args, **kwargs)
        directory = self._paths.pop(fd, None)
        if directory is None:
            return file
        if not self.full(directory):
            return file
        self.refused.append(directory)
        return _HalfWritten(file)

    def _directory(self, path: Any, dir_fd: int | None) -> str:
        """The directory a file is opened in, relative to the store root (the store opens
        files relative to a directory's descriptor, whose path Linux's /proc tells)."""
        if dir_fd is None:
            return Path(path).parent.relative_to(self.root).as_posix()
        where = Path(os.readlink(f"/proc/self/fd/{dir_fd}"), path).parent
        return where.relative_to(os.path.realpath(self.root)).as_posix()


@contextmanager
def full_disk(root: Path, full: Callable[[str], bool]) -> Iterator[FullDisk]:
    """While in the block, local-store writes under ``root`` into directories ``full``
    selects fail half-written with ENOSPC."""
    disk = FullDisk(root, full)
    names = vars(local_store)  # the store module's globals: its ``os`` is replaced in place
    real = names["os"]
    names["os"] = disk
    try:
        yield disk
    finally:
        names["os"] = real


class Tmpfs:
    """A small ``tmpfs`` mounted at ``path``."""

    def __init__(self, path: Path) -> None:
        self.path = path

    @contextmanager
    def full(self) -> Iterator[None]:
        """While in the block, not one byte more fits (new files of no size still do)."""
        filler = self.path / ".filler"
        fd = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            for size in (1 << 20, 4096, 1):
                try:
                    while True:
                        os.write(fd, bytes(size))
                except OSError as exc:
                    if exc.errno != errno.ENOSPC:
                        raise
            yield
        finally:
            os.close(fd)
            filler.unlink()


@contextmanager
def tmpfs(path: Path, size: str = "16m") -> Iterator[Tmpfs]:
    """A ``tmpfs`` of ``size`` mounted at ``path`` (made if missing) for the block; skips the
    test where this process may not mount one."""
    import pytest

    path.mkdir(parents=True, exist_ok=True)
    mount = ["mount", "-t", "tmpfs", "-o", f"size={size},mode=0700", "tmpfs", str(path)]
    done = subprocess.run(mount, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs to fill (needs root): {done.stderr.strip()}")
    try:
        yield Tmpfs(path)
    finally:
        subprocess.run(["umount", "--lazy", str(path)], capture_output=True, check=False)
