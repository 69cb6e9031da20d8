"""Ask the launcher to start waiting jobs; start a launcher when there is none.

Every failure here is quiet and cheap: the caller then has the line's keeper dispatch
(``kinetic.local.line``), exactly as it would without a launcher.
"""

import contextlib
import functools
import hashlib
import json
import os
import socket
import sys
import tempfile
import threading
import time
from pathlib import Path

from kinetic.local import settings
from kinetic.local.environment import start_dispatcher

__all__ = ["launcher_enabled", "request_dispatch"]

_RESPAWN_AFTER = 5.0
_spawned_at: dict[Path, float] = {}
_spawn_lock = threading.Lock()


def launcher_enabled(python: str) -> bool:
    """Launchers run jobs in this interpreter only; ``KINETIC_LOCAL_LAUNCHER=0`` turns them off."""
    return python == sys.executable and settings.LAUNCHER.flag()


@functools.cache
def _socket_path() -> Path:
    """One socket per interpreter and version of the code a launcher may have imported: every
    module of the runtime and the protocol (computed once per process: it stats files, and
    every submission asks). A launcher left from before an upgrade is never used."""
    import kinetic_protocol
    import kinetic_runtime

    identity = hashlib.sha256(sys.executable.encode())
    for package in (kinetic_runtime, kinetic_protocol):
        for source in sorted(Path(str(package.__file__)).parent.rglob("*.py")):
            stat = source.stat()
            identity.update(f"{source}:{stat.st_mtime_ns}:{stat.st_size}".encode())
    folder = Path(tempfile.gettempdir()) / f"kinetic-{os.getuid()}"
    folder.mkdir(mode=0o700, exist_ok=True)
    return folder / f"launcher-{identity.hexdigest()[:16]}.sock"


def _spawn(path: Path) -> None:
    with _spawn_lock:
        if time.monotonic() - _spawned_at.get(path, -_RESPAWN_AFTER) < _RESPAWN_AFTER:
            return
        _spawned_at[path] = time.monotonic()
    command = [sys.executable, "-m", "kinetic_runtime.local.launcher", str(path)]
    with contextlib.suppress(OSError):  # the line's keeper dispatches meanwhile
        start_dispatcher(command, path.with_suffix(".log"))


def request_dispatch(slots_dir: Path) -> bool:
    """Whether the launcher dispatched the line in ``slots_dir`` (started what a free slot
    allowed, with warm supervisors)."""
    path = _socket_path()
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            conn.settimeout(5.0)
            conn.connect(str(path))
            conn.sendall(json.dumps({"dispatch": str(slots_dir)}).encode() + b"\n")
            with conn.makefile("rb") as reader:
                reply = json.loads(reader.readline() or b"{}")
    except (OSError, ValueError):
        _spawn(path)
        return False
    return reply.get("dispatched") is True
