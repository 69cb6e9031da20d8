"""A local submission that fails (a full disk) runs nothing and leaves nothing behind.

The failing write is made deterministic by patching the local backend's private-file writers
for one of the job directory's files, in this process: ``launch.json`` fails before any process
starts, ``supervisor.pid`` after the supervisor has started.
"""

import errno
import os
from pathlib import Path
from typing import Any

import pytest
import scenario_funcs as uf
from local_start_paths import start_path
from scenario_support import ScenarioBackend

from kinetic.local import backend as local_backend_module
from kinetic_protocol import BackendError
from kinetic_runtime.local.processes import group_alive

__all__ = ["start_path"]  # a fixture, used by name


@pytest.mark.parametrize("failing", ["launch.json", "supervisor.pid"])
def test_a_submission_that_cannot_write_its_files_runs_nothing(
    failing: str,
    start_path: str,
    local_backend: ScenarioBackend,
    tmp_path: Path,
    isolated_kinetic: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    jobs = isolated_kinetic / "local" / "jobs"
    started: list[int] = []

    def failing_writer(real: Any) -> Any:
        def full_disk(path: Path, data: bytes, *args: Any, **kwargs: Any) -> None:
            if path.name == failing and path.parent.parent == jobs:
                if failing == "supervisor.pid":
                    started.append(int(data))
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
            real(path, data, *args, **kwargs)

        return full_disk

    for writer in ("write_private", "write_private_atomically"):
        monkeypatch.setattr(
            local_backend_module, writer, failing_writer(getattr(local_backend_module, writer))
        )
    gate, marker = tmp_path / "gate", tmp_path / "ran"
    gate.touch()  # a job that got through runs to its end at once

    with pytest.raises(BackendError, match="No space left on device") as raised:
        local_backend.decorate()(uf.hold).run_async(str(gate), "ran", str(marker))

    for pid in started:
        assert not group_alive(pid), f"the refused job's supervisor {pid} still runs"
    assert not marker.exists(), "the refused job ran"
    assert list(jobs.iterdir()) == [], "the refused job's directory was left behind"
    assert "nothing was started" in str(raised.value)
    assert "disk is full" in str(raised.value)
