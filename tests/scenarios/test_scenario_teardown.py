"""The scenario teardown kills only what is still a local job's (issue 53): a supervisor's pid
kept in a job directory long after it ended may be another process's now, in this suite whose
processes wrap around the pid range several times, and killing its group took down a process
group leader of another test."""

import subprocess
import sys
from pathlib import Path

from scenario_support import local_job_pids


def _job_dir(home: Path, job_id: str) -> Path:
    job_dir = home / "local" / "jobs" / job_id
    job_dir.mkdir(parents=True)
    return job_dir


def _sleeper(**kwargs: object) -> subprocess.Popen[bytes]:
    command = [sys.executable, "-c", "import time; time.sleep(600)"]
    return subprocess.Popen(command, start_new_session=True, **kwargs)  # type: ignore[call-overload]


def test_only_a_pid_that_still_has_its_jobs_files_open_is_named(tmp_path: Path) -> None:
    home = tmp_path / "home"
    stale, running = _job_dir(home, "job-stale"), _job_dir(home, "job-running")
    stranger = _sleeper()  # a group leader of someone else's, with a reused pid
    with open(running / "supervisor.log", "ab") as log:
        supervisor = _sleeper(stderr=log)
    try:
        (stale / "supervisor.pid").write_text(str(stranger.pid))
        (running / "supervisor.pid").write_text(str(supervisor.pid))
        assert list(local_job_pids(home)) == [supervisor.pid]
        assert (stale / "cancelled").exists() and (running / "cancelled").exists()
    finally:
        for process in (stranger, supervisor):
            process.kill()
            process.wait()
