"""Files and directories only their owner can read: everything Kinetic writes under its home
and in a local (``file://``) store.

``os.open``'s and ``mkdir``'s modes are masked by the umask, which may be anything (000 on
some CI machines): the modes here are set explicitly after creating, so they are 0600 and
0700 whatever the umask is.
"""

import contextlib
import os
import threading
from pathlib import Path

__all__ = [
    "DIR_MODE",
    "FILE_MODE",
    "make_private_dirs",
    "open_private",
    "write_private",
    "write_private_atomically",
]

FILE_MODE = 0o600
DIR_MODE = 0o700


def make_private_dirs(path: Path, *, top: Path | None = None) -> None:
    """``mkdir -p path``, each directory it creates 0700; ``top`` (an ancestor of ``path``)
    and the directories under it are made 0700 even if they existed."""
    missing: list[Path] = []
    current = path
    while not current.is_dir():
        missing.append(current)
        if current.parent == current:
            break
        current = current.parent
    for directory in reversed(missing):
        with contextlib.suppress(FileExistsError):
            directory.mkdir(mode=DIR_MODE)
        os.chmod(directory, DIR_MODE)
    if top is not None:
        for directory in (path, *path.parents):
            if directory.is_dir():
                os.chmod(directory, DIR_MODE)
            if directory == top:
                break


def open_private(path: Path, flags: int) -> int:
    """``os.open(path, flags | O_CREAT)`` for a file that is 0600 from its first byte."""
    fd = os.open(path, flags | os.O_CREAT, FILE_MODE)
    try:
        os.fchmod(fd, FILE_MODE)
    except BaseException:
        os.close(fd)
        raise
    return fd


def write_private(path: Path, data: bytes, *, exclusive: bool = False) -> None:
    """Write ``data`` to ``path`` (created 0600; refused if it exists when ``exclusive``)."""
    flags = os.O_WRONLY | os.O_TRUNC | (os.O_EXCL if exclusive else 0)
    fd = open_private(path, flags)
    with os.fdopen(fd, "wb") as out:
        out.write(data)


def write_private_atomically(path: Path, data: bytes) -> None:
    """Readers see the whole file or none of it, and it is 0600 throughout."""
    temp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        write_private(temp, data)
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            temp.unlink()
        raise
