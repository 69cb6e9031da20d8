"""User code for ``test_local_priority``: jobs import it by name from the code bundle."""

import os
import time
from pathlib import Path

__all__ = ["hold", "note_start"]


def hold(gate: str) -> None:
    """Run until the file ``gate`` exists (keeping the only slot)."""
    while not Path(gate).exists():
        time.sleep(0.01)


def note_start(log: str, label: str) -> str:
    """Append ``label`` to ``log`` as the job starts: the file's lines are the start order."""
    fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, f"{label}\n".encode())
    finally:
        os.close(fd)
    return label
