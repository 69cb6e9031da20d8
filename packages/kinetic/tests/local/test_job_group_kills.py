"""Which process group of a local job a status read or a delete kills (issue 53). A supervisor is
known by its process identity, not its pid alone: once it has died, another process may hold
its pid (this suite wraps the pid range several times). That stranger is not the job's
supervisor, so the job is settled as one whose supervisor died, and neither a status read nor
a delete kills the stranger's group. Real processes."""

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from kinetic.local.backend import LocalBackend
from kinetic_protocol import BackendSettings, FailureCause, JobStatus
from kinetic_runtime.local import claim, supervisor
from kinetic_runtime.local.processes import process_identity
from kinetic_testing.records import job_record

pytestmark = pytest.mark.skipif(
    not Path("/proc/self/stat").exists(), reason="start times come from procfs"
)

JOB_ID = "job-supervised"


@pytest.fixture
def leader() -> Iterator[subprocess.Popen[bytes]]:
    """A process group leader alive for the whole test: the job's supervisor, or a stranger
    (a shell, say) that holds the pid of a supervisor that died, as the test records it."""
    process = subprocess.Popen(
        [sys.executable, "-c", "import sys; sys.stdin.read()"],
        stdin=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        yield process
    finally:
        process.kill()
        process.wait(timeout=30)
        assert process.stdin is not None
        process.stdin.close()


@pytest.fixture
def backend(clean_kinetic_env: Path) -> LocalBackend:
    return LocalBackend(BackendSettings())


def _job_claimed_by(backend: LocalBackend, identity: str, phase: str = "RUNNING") -> Path:
    """The directory of a job claimed by the process ``identity`` names, in ``phase``."""
    job_dir = backend.job_dir(JOB_ID)
    job_dir.mkdir(parents=True)
    pid = int(identity.partition(":")[0])
    supervisor.write_state(job_dir, phase=phase, supervisor_pid=pid)
    (job_dir / claim.PID_FILE).write_text(identity)
    return job_dir


def _dead_supervisor_with_the_pid_of(stranger: subprocess.Popen[bytes]) -> str:
    """The identity of a supervisor that held ``stranger``'s pid and died before it started."""
    pid, start_ticks = process_identity(stranger.pid).split(":")
    return f"{pid}:{int(start_ticks) - 1}"


def test_a_job_whose_supervisors_pid_a_stranger_holds_is_settled_failed_and_the_stranger_lives(
    backend: LocalBackend, leader: subprocess.Popen[bytes]
) -> None:
    stranger = leader
    job_dir = _job_claimed_by(backend, _dead_supervisor_with_the_pid_of(stranger))
    state = backend.statuses([job_record(job_id=JOB_ID)])[JOB_ID]
    assert state.status is JobStatus.FAILED, state
    assert state.cause is FailureCause.EXIT
    assert "supervisor process exited unexpectedly" in state.detail
    assert (supervisor.read_state(job_dir) or {}).get("phase") == "FAILED"
    assert stranger.poll() is None, "settling the job killed a process that was not the job's"


def test_deleting_a_job_whose_supervisors_pid_a_stranger_holds_leaves_the_stranger_alone(
    backend: LocalBackend, leader: subprocess.Popen[bytes]
) -> None:
    stranger = leader
    job_dir = _job_claimed_by(backend, _dead_supervisor_with_the_pid_of(stranger))
    backend.delete(job_record(job_id=JOB_ID), timeout=30, poll_interval=0.01)
    assert not job_dir.exists()
    assert stranger.poll() is None, "the delete killed a process that was not the job's"


def test_a_job_whose_supervisor_still_runs_is_running(
    backend: LocalBackend, leader: subprocess.Popen[bytes]
) -> None:
    """The same pid and start time: the supervisor itself, not a stranger."""
    _job_claimed_by(backend, process_identity(leader.pid))
    state = backend.statuses([job_record(job_id=JOB_ID)])[JOB_ID]
    assert state.status is JobStatus.RUNNING, state


def test_deleting_an_ended_job_leaves_its_supervisor_to_hand_on_its_slot(
    backend: LocalBackend, leader: subprocess.Popen[bytes]
) -> None:
    """A supervisor that recorded the job's end has stopped the job's processes; it still runs
    a moment, starting the next waiting job, and is not killed for a delete meanwhile."""
    job_dir = _job_claimed_by(backend, process_identity(leader.pid), "SUCCEEDED")
    backend.delete(job_record(job_id=JOB_ID), timeout=30, poll_interval=0.01)
    assert not job_dir.exists()
    assert leader.poll() is None, "the delete killed the supervisor of an ended job"


_KILLED_MID_CLAIM = """
import os, signal, sys
from pathlib import Path
from kinetic_runtime.local import claim

rename = os.rename

def rename_then_die_before_recording(source, target):
    if Path(target).name == claim.PID_FILE:
        os.kill(os.getpid(), signal.SIGKILL)
    rename(source, target)

os.rename = rename_then_die_before_recording
claim.claim(Path(sys.argv[1]))
"""


def test_a_job_whose_supervisor_was_killed_while_claiming_it_is_settled_failed(
    backend: LocalBackend,
) -> None:
    """Killed after taking the claim and before recording it, a supervisor leaves the claim
    under its own name: the job is not left looking unstarted for ever."""
    job_dir = backend.job_dir(JOB_ID)
    job_dir.mkdir(parents=True)
    supervisor.write_state(job_dir, phase="PENDING")
    claim.set_claim_aside(job_dir)
    killed = subprocess.run([sys.executable, "-c", _KILLED_MID_CLAIM, str(job_dir)], check=False)
    assert killed.returncode == -9
    assert not claim.unclaimed(job_dir) and not (job_dir / claim.PID_FILE).exists()
    state = backend.statuses([job_record(job_id=JOB_ID)])[JOB_ID]
    assert state.status is JobStatus.FAILED, state
    assert "supervisor process exited unexpectedly" in state.detail
