"""A local job's processes carry the runtime, never the client package.

The supervisor and the launcher live in ``kinetic_runtime.local``; a job forked by the launcher
inherits whatever the launcher imported, so the launcher must not import ``kinetic``.
"""

from pathlib import Path

import pytest
import scenario_funcs as uf
from scenario_support import ScenarioBackend, wait_until

from kinetic.local.launcher_client import _socket_path


def _run_kinetic_modules(local_backend: ScenarioBackend) -> list[str]:
    remote = local_backend.decorate()(uf.kinetic_modules)
    loaded: list[str] = remote()
    return loaded


def _client_modules(loaded: list[str]) -> list[str]:
    return [m for m in loaded if m == "kinetic" or m.startswith("kinetic.")]


def test_a_job_started_by_a_fresh_supervisor_never_loads_the_client(
    local_backend: ScenarioBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KINETIC_LOCAL_LAUNCHER", "0")
    loaded = _run_kinetic_modules(local_backend)
    assert "kinetic_runtime.main" in loaded
    assert "kinetic_runtime.local.supervisor" not in loaded, "the job was forked, not started"
    assert _client_modules(loaded) == []


def test_a_job_forked_by_the_launcher_never_loads_the_client(
    local_backend: ScenarioBackend,
) -> None:
    _run_kinetic_modules(local_backend)  # starts the launcher if none serves this code yet
    socket_path: Path = _socket_path()
    wait_until(socket_path.exists, f"the launcher's socket {socket_path}")
    loaded = _run_kinetic_modules(local_backend)
    # Forked from the launcher (whose own module is ``__main__``), it inherits the supervisor.
    assert "kinetic_runtime.local.supervisor" in loaded, "the job was not forked by the launcher"
    assert _client_modules(loaded) == []
