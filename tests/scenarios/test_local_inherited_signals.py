"""A local job started without the launcher inherits the submitter's signal dispositions.

A program started with SIGCHLD ignored (some process managers and harnesses do this) passes
that on across exec: the supervisor's ``os.wait`` then fails once its runtime has ended, and
the keeper's ``waitpid`` fails at the job's end. The job must end as it would anywhere else:
recorded by its own supervisor, with only its own output in its log.
"""

import signal
import sys
from pathlib import Path

import pytest
import scenario_funcs as uf
from scenario_support import ScenarioBackend

from kinetic import JobStatus
from kinetic_runtime.local import supervisor

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="an ignored SIGCHLD survives exec on Linux"
)


def test_a_job_submitted_with_sigchld_ignored_ends_recorded_by_its_supervisor(
    local_backend: ScenarioBackend,
    isolated_kinetic: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("KINETIC_LOCAL_LAUNCHER", "0")  # the supervisor is exec'd by this process
    add = local_backend.decorate()(uf.add)
    previous = signal.signal(signal.SIGCHLD, signal.SIG_IGN)
    try:
        job = add.run_async(2, 3)  # its supervisor starts with SIGCHLD ignored
    finally:
        signal.signal(signal.SIGCHLD, previous)

    assert job.result(timeout=60, cleanup=False) == 5
    state = supervisor.read_state(isolated_kinetic / "local" / "jobs" / job.job_id) or {}
    assert state.get("phase") == JobStatus.SUCCEEDED.value
    assert state.get("exit_code") == 0, f"not recorded by the supervisor: {state}"
    log = job.logs() or ""
    assert "Error" not in log, log
    assert f"job {job.job_id}: succeeded" in log.splitlines()[-1], log
