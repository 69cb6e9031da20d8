"""The two ways a local job's supervisor starts: forked by the line's keeper, or by a launcher.

``start_path`` (a fixture, imported by the tests that use it) makes one of them certain and
``assert_started_by`` checks a supervisor was started that way, from its command line.
"""

from pathlib import Path

import pytest
import scenario_funcs as uf
from scenario_support import ScenarioBackend, wait_until

from kinetic.local.launcher_client import _socket_path
from kinetic_runtime.local.claim import read_claimant

__all__ = ["assert_started_by", "start_path", "supervisor_pid"]

_MODULES = {
    "keeper": "kinetic_runtime.local.line_keeper",
    "launcher": "kinetic_runtime.local.launcher",
}


@pytest.fixture(params=sorted(_MODULES))
def start_path(
    request: pytest.FixtureRequest, local_backend: ScenarioBackend, monkeypatch: pytest.MonkeyPatch
) -> str:
    """``keeper``: launchers off, so the line's keeper starts every job. ``launcher``: one
    serves this code before the test starts."""
    path: str = request.param
    if path == "keeper":
        monkeypatch.setenv("KINETIC_LOCAL_LAUNCHER", "0")
    else:
        local_backend.decorate()(uf.add).run_async(1).result(timeout=60)
        socket_path: Path = _socket_path()
        wait_until(socket_path.exists, f"the launcher's socket {socket_path}")
    return path


def supervisor_pid(home: Path, job_id: str) -> int:
    """The pid (and process group) of a local job's supervisor, once it has claimed the job."""
    job_dir = home / "local" / "jobs" / job_id
    claimant = wait_until(lambda: read_claimant(job_dir), f"{job_dir} to be claimed")
    return claimant.pid


def assert_started_by(path: str, pid: int) -> None:
    command = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    assert _MODULES[path].encode() in command, f"supervisor {pid} is {command!r}, not {path}"
