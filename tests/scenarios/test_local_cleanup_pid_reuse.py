"""Cleaning up a finished local job stops no process (issue 53): the job's supervisor recorded
its end, and the pid it left in the job's directory may be another process's by now. This
suite wraps around the machine's pid range several times; a cleanup that killed that pid's
process group took down another test's process group leader (a shell, on a user's machine)."""

import subprocess
import sys
from pathlib import Path

import scenario_funcs as uf
from scenario_support import ScenarioBackend

from kinetic import JobStatus
from kinetic_runtime.local.processes import process_identity


def test_cleanup_of_a_finished_job_leaves_a_process_that_reused_its_supervisors_pid_alone(
    local_backend: ScenarioBackend, isolated_kinetic: Path
) -> None:
    job = local_backend.decorate()(uf.add).run_async(1, 2)
    assert job.result(timeout=60, cleanup=False) == 3
    stranger = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(600)"], start_new_session=True
    )
    try:
        pid_file = isolated_kinetic / "local" / "jobs" / job.job_id / "supervisor.pid"
        pid, start_ticks = process_identity(stranger.pid).split(":")
        pid_file.write_text(f"{pid}:{int(start_ticks) - 1}")  # as if the pid had come round
        job.cleanup()
        assert job.status() is JobStatus.NOT_FOUND
        assert stranger.poll() is None, "the cleanup killed a process that was not the job's"
    finally:
        stranger.kill()
        stranger.wait()
