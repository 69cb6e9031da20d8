"""``timeout=`` on ``@kinetic.run``: each attempt that runs past it is stopped where it runs (the
local supervisor, the pod's ``activeDeadlineSeconds``) and ends with cause ``timeout``, its
output so far still readable.

The deadlines here are generous for what the job does before it (print two lines): the job
then waits on a gate that never opens, so only the timeout can end it.
"""

from pathlib import Path

import pytest
import scenario_funcs as uf
from scenario_support import ScenarioBackend, pid_gone, wait_until

from kinetic import FailureCause, JobFailedError, JobStatus

TIMEOUTS = {"local": 3.0, "gke": 10.0, "pathways": 10.0}
"""Seconds each backend's attempt may run: a pod's deadline counts from its start on the
node, so it covers the runtime's start too (pathways: from each host's runtime start)."""


@pytest.mark.backends("local", "gke", "pathways")
def test_a_job_past_its_timeout_ends_with_cause_timeout_and_keeps_its_output(
    kinetic_backend: ScenarioBackend, tmp_path: Path
) -> None:
    timeout = TIMEOUTS[kinetic_backend.name]
    remote = kinetic_backend.decorate(timeout=timeout)(uf.print_then_hold)
    job = remote.run_async(["first line", "second line"], str(tmp_path / "never-opened"))
    with pytest.raises(JobFailedError) as caught:
        job.result(timeout=120)
    assert job.status() is JobStatus.FAILED
    failure = job.failure()
    assert failure is not None
    assert failure.cause is FailureCause.TIMEOUT
    assert failure.reason in str(caught.value)
    output = job.logs()
    assert output is not None
    assert "first line\nsecond line\n" in output
    assert "after the gate" not in output


def test_a_local_job_past_its_timeout_takes_what_it_started_with_it(
    local_backend: ScenarioBackend, tmp_path: Path
) -> None:
    pid_file = tmp_path / "pids"
    job = local_backend.decorate(timeout=3)(uf.spawn_child_and_hold).run_async(str(pid_file))
    with pytest.raises(JobFailedError, match="ran past its timeout of 3s"):
        job.result(timeout=60)
    runtime, child = (int(pid) for pid in pid_file.read_text().split())
    wait_until(lambda: pid_gone(runtime) and pid_gone(child), "the job's processes to be gone")
    failure = job.failure()
    assert failure is not None
    assert (failure.cause, failure.reason) == (
        FailureCause.TIMEOUT,
        "ran past its timeout of 3s and was stopped",
    )


def test_a_batch_applies_the_timeout_to_each_child(
    local_backend: ScenarioBackend, tmp_path: Path
) -> None:
    end_by = local_backend.decorate(timeout=3)(uf.end_by)
    gate = str(tmp_path / "never-opened")
    batch = end_by.run_async_map([{"how": "quick"}, {"how": "hold", "gate": gate}])
    outcomes = batch.results(return_exceptions=True, cleanup=False)
    assert outcomes[0] == "quick"
    assert isinstance(outcomes[1], JobFailedError)
    assert batch.cause_counts() == {"timeout": 1}
    held = batch.jobs[1]
    assert held is not None and held.record.timeout == 3.0
