"""A local job's ``state.json``: what its supervisor records, and how the last record gets
written even on a full disk.

Each record replaces the file atomically (a temporary file renamed into place), which needs
room for a new file. So the supervisor sets room aside when it starts (``state.reserve``): a
final record that meets a full disk, and still does after a short wait, is written into that
file in place and renamed over ``state.json``, which needs no new room. Without it, a job whose
supervisor could not record its end read as a supervisor that died, with an empty log.
"""

import contextlib
import json
import os
import time
from pathlib import Path
from typing import Any

from kinetic_protocol.errors import is_disk_full
from kinetic_runtime.disk_full import set_aside, with_room
from kinetic_runtime.private_files import write_private_atomically

__all__ = [
    "RESERVE_FILE",
    "STATE_FILE",
    "read_note",
    "read_state",
    "set_room_aside",
    "write_final_state",
    "write_state",
    "write_state_if_room",
]

STATE_FILE = "state.json"
RESERVE_FILE = "state.reserve"


def write_state(job_dir: Path, **state: Any) -> None:
    """Replace ``state.json`` atomically, so readers never see half a file."""
    state["updated_at"] = time.time()
    write_private_atomically(job_dir / STATE_FILE, json.dumps(state).encode())


def read_state(job_dir: Path) -> dict[str, Any] | None:
    try:
        loaded: dict[str, Any] = json.loads((job_dir / STATE_FILE).read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return None
    return loaded


def set_room_aside(job_dir: Path) -> None:
    """Room for the final record, taken while there is some (best effort)."""
    set_aside(job_dir / RESERVE_FILE)


def write_state_if_room(job_dir: Path, **state: Any) -> None:
    """:func:`write_state` of a record that a later one supersedes: on a full disk it is
    skipped (readers see the one before), never the end of the supervisor."""
    try:
        write_state(job_dir, **state)
    except OSError as exc:
        if not is_disk_full(exc):
            raise


def write_final_state(job_dir: Path, **state: Any) -> None:
    """:func:`write_state` of how the job ended: on a full disk, into the room set aside (or,
    without it, once a short wait found room)."""
    try:
        write_state(job_dir, **state)
    except OSError as exc:
        if not is_disk_full(exc):
            raise
        if not _into_reserve(job_dir, state):
            with_room(lambda: write_state(job_dir, **state))


def _into_reserve(job_dir: Path, state: dict[str, Any]) -> bool:
    """Write ``state`` into the room set aside, in place, and rename it over ``state.json``."""
    state["updated_at"] = time.time()
    data = json.dumps(state).encode()
    try:
        fd = os.open(job_dir / RESERVE_FILE, os.O_WRONLY | os.O_NOFOLLOW)
    except FileNotFoundError:
        return False
    try:
        if os.fstat(fd).st_size < len(data):
            return False
        os.pwrite(fd, data, 0)
        os.ftruncate(fd, len(data))
    finally:
        os.close(fd)
    os.replace(job_dir / RESERVE_FILE, job_dir / STATE_FILE)
    return True


def read_note(path: Path) -> str:
    """What a runtime wrote into the termination file set aside for it (empty if nothing)."""
    with contextlib.suppress(OSError, UnicodeDecodeError):
        return path.read_bytes().decode().strip()
    return ""
