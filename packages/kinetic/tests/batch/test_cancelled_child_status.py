"""How a batch sees a child while the local backend is deleting it (cancel, fail-fast, retry).

A batch treats FAILED and NOT_FOUND differently: ``failures()`` lists only FAILED children,
and a submitter that sees a child vanish (NOT_FOUND) checks for a cancel requested by another
process before it launches more inputs. So a child that is being deleted must never be
reported FAILED just because its processes were killed before its directory was removed.
"""

import subprocess
import sys
from pathlib import Path

import pytest

from kinetic.local.backend import LocalBackend
from kinetic_protocol import BackendSettings, JobRecord, JobStatus
from kinetic_runtime.local import supervisor


def _dead_pid() -> int:
    """The pid of a process that has exited and been reaped."""
    done = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        check=True,
        capture_output=True,
        text=True,
    )
    return int(done.stdout)


def _record(job_id: str) -> JobRecord:
    return JobRecord(
        job_id=job_id,
        backend="local",
        project="",
        cluster_name="",
        zone="",
        namespace="",
        bucket_name="file:///unused",
        k8s_name=job_id,
        image_uri="",
        accelerator="cpu",
        func_name="f",
        display_name="f",
        created_at="2026-01-01T00:00:00+00:00",
    )


@pytest.fixture
def backend(isolated_settings: Path) -> LocalBackend:
    return LocalBackend(BackendSettings())


def _running_job_whose_supervisor_died(backend: LocalBackend, job_id: str) -> Path:
    job_dir = backend.job_dir(job_id)
    job_dir.mkdir(parents=True)
    pid = _dead_pid()
    supervisor.write_state(job_dir, phase="RUNNING", supervisor_pid=pid)
    (job_dir / "supervisor.pid").write_text(str(pid))
    return job_dir


def test_a_child_killed_by_its_deletion_is_not_found_not_failed(backend: LocalBackend) -> None:
    """The moment between ``delete()`` killing the processes and removing the directory."""
    job_dir = _running_job_whose_supervisor_died(backend, "job-being-deleted")
    (job_dir / supervisor.CANCEL_MARKER).touch()  # delete() marks the job first
    state = backend.statuses([_record("job-being-deleted")])["job-being-deleted"]
    assert state.status is JobStatus.NOT_FOUND, state


def test_a_child_whose_supervisor_died_on_its_own_is_failed(backend: LocalBackend) -> None:
    _running_job_whose_supervisor_died(backend, "job-crashed")
    state = backend.statuses([_record("job-crashed")])["job-crashed"]
    assert state.status is JobStatus.FAILED
