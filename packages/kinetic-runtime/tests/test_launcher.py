"""The local launcher outlives a client that went away before its answer (a submitter killed by
``kill -9`` while it waited): the next request is still served by the same launcher.

Real processes: a launcher on its own socket, held (SIGSTOP) while the first client sends its
request and closes, so its answer certainly finds the client gone.
"""

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")


def _held(pid: int) -> bool:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "T"


def _until(condition: Callable[[], bool], what: str) -> None:
    """Poll ``condition`` until it is true; fail after 30 s naming ``what``."""
    deadline = time.monotonic() + 30
    delay = 0.002
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(delay)
        delay = min(delay * 2, 0.05)


@pytest.fixture
def launcher(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[bytes], Path]]:
    path = tmp_path / "launcher.sock"
    process = subprocess.Popen(
        [sys.executable, "-m", "kinetic_runtime.local.launcher", str(path)],
        stderr=subprocess.PIPE,
    )
    try:
        _until(path.exists, "the launcher's socket")
        yield process, path
    finally:
        process.kill()
        process.communicate()


def _request(path: Path, slots_dir: Path) -> socket.socket:
    """Ask the launcher to dispatch the line in ``slots_dir``."""
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.connect(str(path))
    conn.sendall(json.dumps({"dispatch": str(slots_dir)}).encode() + b"\n")
    return conn


def test_the_launcher_serves_the_next_job_after_a_client_left_before_its_answer(
    launcher: tuple[subprocess.Popen[bytes], Path], tmp_path: Path
) -> None:
    process, path = launcher
    slots_dir = tmp_path / "slots"  # an empty line: each dispatch starts nothing

    os.kill(process.pid, signal.SIGSTOP)
    _until(lambda: _held(process.pid), "the launcher to be held")
    _request(path, slots_dir).close()  # gone before the launcher could answer
    os.kill(process.pid, signal.SIGCONT)

    with _request(path, slots_dir) as conn, conn.makefile("rb") as reader:
        conn.settimeout(30)
        reply = json.loads(reader.readline() or b"{}")
    assert reply == {"dispatched": True}
    assert process.poll() is None, "the launcher ended"
