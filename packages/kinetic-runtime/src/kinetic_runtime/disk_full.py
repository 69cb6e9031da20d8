"""Room on a full disk: a write tried again while the disk is full, and room set aside
beforehand that is later written in place, which needs none.

A full disk is an infrastructure fault that passes, not the job's: the runtime waits a little
to store its result, and a run it keeps from its function ends with ``EXIT_NO_SPACE``, saying
what it could not write where into a file its local supervisor set aside
(``KINETIC_TERMINATION_LOG``). Standard library only (and ``kinetic_protocol.errors``): the
supervisor loads nothing else.
"""

import contextlib
import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

from kinetic_protocol.errors import is_disk_full

__all__ = ["ROOM_WAITS", "TERMINATION_BYTES", "overwrite", "set_aside", "with_room"]

_T = TypeVar("_T")
ROOM_WAITS = (0.5, 1.0, 2.0, 4.0, 8.0)
"""Seconds between tries of a write that met a full disk: about 15 s in all."""
TERMINATION_BYTES = 4096
"""The room set aside for a termination message."""


def with_room(write: Callable[[], _T], waits: Sequence[float] = ROOM_WAITS) -> _T:
    """``write()``, tried again after each of ``waits`` while it fails for a full disk."""
    for wait in waits:
        try:
            return write()
        except Exception as exc:
            if not is_disk_full(exc):
                raise
        time.sleep(wait)
    return write()


def set_aside(path: Path) -> None:
    """Make ``path`` hold :data:`TERMINATION_BYTES` of blanks now, so that what is written
    there later, in place, fits even on a full disk (best effort: a full disk leaves none)."""
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)  # private, as ever
        with os.fdopen(fd, "wb") as room:
            os.fchmod(fd, 0o600)
            room.write(b" " * TERMINATION_BYTES)


def overwrite(path: Path | str, message: str = "") -> None:
    """``message`` over what room was set aside at ``path``, blank-padded to its size: writing
    in place, and never growing the file, needs no new room (best effort)."""
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_WRONLY | os.O_NOFOLLOW)  # never made here: set aside only
        try:
            room = os.fstat(fd).st_size
            os.pwrite(fd, message.encode()[:room].ljust(room), 0)
        finally:
            os.close(fd)
