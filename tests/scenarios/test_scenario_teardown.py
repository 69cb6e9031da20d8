"""The scenario teardown kills only what is still a local job's (issue 53): a supervisor's pid
kept in a job directory long after it ended may be another process's now, in this suite whose
processes wrap around the pid range several times, and killing its group took down a process
group leader of another test. A supervisor is recorded with its start time, which tells it from
a process that reused its pid."""

import subprocess
import sys
from pathlib import Path

import pytest
from scenario_support import local_job_pids

from kinetic_runtime.local.claim import CLAIM_FILE, PID_FILE
from kinetic_runtime.local.processes import process_identity

pytestmark = pytest.mark.skipif(
    not Path("/proc/self/stat").exists(), reason="start times come from procfs"
)


def _job_dir(home: Path, job_id: str) -> Path:
    job_dir = home / "local" / "jobs" / job_id
    job_dir.mkdir(parents=True)
    return job_dir


def _sleeper() -> subprocess.Popen[bytes]:
    command = [sys.executable, "-c", "import time; time.sleep(600)"]
    return subprocess.Popen(command, start_new_session=True)


def test_only_a_supervisor_that_is_still_the_process_recorded_is_named(tmp_path: Path) -> None:
    home = tmp_path / "home"
    stale, running = _job_dir(home, "job-stale"), _job_dir(home, "job-running")
    claiming, withdrawn = _job_dir(home, "job-claiming"), _job_dir(home, "job-withdrawn")
    stranger = _sleeper()  # a group leader of someone else's, with a reused pid
    supervisor, claimant = _sleeper(), _sleeper()
    try:
        pid, start_ticks = process_identity(stranger.pid).split(":")
        (stale / PID_FILE).write_text(f"{pid}:{int(start_ticks) - 1}")
        (running / PID_FILE).write_text(process_identity(supervisor.pid))
        (claiming / f"{CLAIM_FILE}.{process_identity(claimant.pid)}").touch()
        (withdrawn / f"{CLAIM_FILE}.withdrawn").touch()
        assert sorted(local_job_pids(home)) == sorted([supervisor.pid, claimant.pid])
        assert all((job / "cancelled").exists() for job in (stale, running, claiming, withdrawn))
    finally:
        for process in (stranger, supervisor, claimant):
            process.kill()
            process.wait()
