"""SIGKILL of a local job's supervisor (not its runtime): the job ends there, for good.

The runtime dies with its supervisor, so the job is FAILED with a reason, no result appears
later (the status is the one truth), and the slot is not free while the job's code still runs.
Both ways a supervisor starts are covered (``start_path``). Linux only: elsewhere a runtime
outlives its supervisor until the backend next looks at the job.
"""

import os
import signal
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import scenario_funcs as uf
from local_start_paths import assert_started_by, start_path, supervisor_pid
from scenario_support import ScenarioBackend, pid_gone, wait_until

from kinetic import JobFailedError, JobStatus
from kinetic_protocol import layout
from kinetic_runtime.local.slot_queue import waiting_jobs

__all__ = ["start_path"]  # a fixture, used by name

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="the runtime dies with its supervisor on Linux"
)


@pytest.fixture
def gates(tmp_path: Path) -> Iterator[list[Path]]:
    """Gate files for held jobs; all opened at the end, so no job waits out its timeout."""
    paths = [tmp_path / f"gate-{i}" for i in range(2)]
    try:
        yield paths
    finally:
        for gate in paths:
            gate.touch()


def _started_pid(marker: Path) -> int:
    """The pid of the process running the job's function, once it has started."""
    return int(wait_until(lambda: marker.exists() and marker.read_text(), f"{marker.name}"))


def test_a_job_whose_supervisor_is_killed_fails_and_never_stores_a_result(
    start_path: str,
    local_backend: ScenarioBackend,
    tmp_path: Path,
    isolated_kinetic: Path,
    gates: list[Path],
) -> None:
    gate, started = gates[0], tmp_path / "started"
    job = local_backend.decorate()(uf.hold).run_async(str(gate), "late", str(started))
    runtime = _started_pid(started)
    sup = supervisor_pid(isolated_kinetic, job.job_id)
    assert_started_by(start_path, sup)

    os.kill(sup, signal.SIGKILL)
    state = job.wait(timeout=30)
    assert state.status is JobStatus.FAILED
    assert "supervisor" in state.detail
    gate.touch()  # a runtime that outlived its supervisor would now store "late"
    wait_until(lambda: pid_gone(runtime), f"the job's runtime {runtime} to be gone")

    assert not local_backend.store().exists(layout.result_key(job.job_id))
    assert job.status() is JobStatus.FAILED
    with pytest.raises(JobFailedError, match="supervisor"):
        job.result(timeout=30)


def test_one_slot_never_runs_two_jobs_after_a_supervisor_is_killed(
    start_path: str,
    local_backend: ScenarioBackend,
    tmp_path: Path,
    isolated_kinetic: Path,
    gates: list[Path],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("KINETIC_LOCAL_SLOTS", "1")
    hold = local_backend.decorate()(uf.hold)
    first_started, second_started = tmp_path / "first-started", tmp_path / "second-started"
    first = hold.run_async(str(gates[0]), 1, str(first_started))
    first_runtime = _started_pid(first_started)
    second = hold.run_async(str(gates[1]), 2, str(second_started))
    slots_dir = isolated_kinetic / "local" / "slots"
    wait_until(
        lambda: second_started.exists() or second.job_id in waiting_jobs(slots_dir),
        "the second job to wait in line",
    )
    assert not second_started.exists(), "the second job started while the first held the slot"
    sup = supervisor_pid(isolated_kinetic, first.job_id)
    assert_started_by(start_path, sup)

    os.kill(sup, signal.SIGKILL)
    wait_until(second_started.exists, "the second job to start once the first is gone")
    assert pid_gone(first_runtime), "the second job runs while the first job's code still runs"
    assert first.status() is JobStatus.FAILED
    gates[1].touch()
    assert second.result(timeout=60) == 2


def test_a_job_settled_from_its_result_after_its_supervisor_died_says_so(
    local_backend: ScenarioBackend,
    tmp_path: Path,
    isolated_kinetic: Path,
    gates: list[Path],
) -> None:
    """The one way a success can come back before its last output is in the log: the
    supervisor is killed after the job stored its result and before the process that copies
    the job's output drained it. The status says so instead of looking like any success."""
    gate, started = gates[0], tmp_path / "started"
    job = local_backend.decorate()(uf.hold).run_async(str(gate), "kept", str(started))
    function = _started_pid(started)
    keeper = int(Path(f"/proc/{function}/stat").read_text().rsplit(")", 1)[1].split()[1])
    os.kill(keeper, signal.SIGSTOP)  # copies nothing more, and does not reap the job
    gate.touch()
    key = layout.result_key(job.job_id)
    wait_until(lambda: local_backend.store().exists(key), "the job's stored result")
    os.kill(supervisor_pid(isolated_kinetic, job.job_id), signal.SIGKILL)

    state = job.wait(timeout=30)
    assert state.status is JobStatus.SUCCEEDED
    assert "supervisor exited before recording the end" in state.detail
    assert "may miss the last lines" in state.detail
    assert job.result(timeout=30, cleanup=False) == "kept"
