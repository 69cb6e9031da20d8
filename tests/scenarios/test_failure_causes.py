"""Every attempt that ends without a value says why, as data: ``JobHandle.failure()``,
``BatchHandle.cause_counts()`` and the CLI's ``--json``. The faults a cluster injects (OOM,
preemption, eviction, image pull) are in ``test_gke_client``; timeouts in ``test_timeouts``.
"""

import json
import re
from pathlib import Path

import pytest
import scenario_funcs as uf
from click.testing import CliRunner
from scenario_support import ScenarioBackend, wait_until

from kinetic import FailureCause, JobFailedError, JobStatus
from kinetic.cli import cli
from kinetic_protocol import parse_accelerator, valid_accelerator_names


def test_a_function_that_raises_ends_with_cause_user(kinetic_backend: ScenarioBackend) -> None:
    remote = kinetic_backend.decorate()(uf.fail_with)
    job = remote.run_async("bad input", 7)
    with pytest.raises(uf.ScenarioError):
        job.result()
    failure = job.failure()
    assert failure is not None
    assert failure.cause is FailureCause.USER
    assert failure.reason.endswith("ScenarioError: bad input (code 7)"), failure.reason
    assert (failure.attempt, failure.phase) == (0, "run")


def test_a_job_that_succeeded_has_no_failure(kinetic_backend: ScenarioBackend) -> None:
    job = kinetic_backend.decorate()(uf.add).run_async(1, 2)
    assert job.result(cleanup=False) == 3
    assert job.failure() is None


def test_a_process_that_ends_without_a_result_ends_with_cause_exit(
    kinetic_backend: ScenarioBackend,
) -> None:
    job = kinetic_backend.decorate()(uf.exit_process).run_async(5)
    with pytest.raises(JobFailedError):
        job.result()
    failure = job.failure()
    assert failure is not None
    assert failure.cause is FailureCause.EXIT
    assert failure.exit_code == 5
    assert "exit 5" in failure.reason
    # The host that failed said why. On a slice that is not always the leader: the first host
    # to fail stops the others, under load before the leader has run the function at all.
    assert "leaving with status 5" in job.tail(5, host=_failed_host(failure.reason))


@pytest.mark.backends("local", "pathways")
def test_the_host_that_failed_a_slice_keeps_its_last_lines_though_the_leader_said_nothing(
    kinetic_backend: ScenarioBackend, tmp_path: Path
) -> None:
    """A follower fails while the leader has not got to the function: the failure names the
    follower, whose output says why, read from the store once the job is cleaned up."""
    gate = tmp_path / "never-opened"
    accelerator = _TWO_HOSTS if kinetic_backend.name == "local" else kinetic_backend.accelerator
    remote = kinetic_backend.decorate(accelerator=accelerator)(uf.exit_on_a_follower)
    try:
        job = remote.run_async(5, str(gate))
        with pytest.raises(JobFailedError):
            job.result()  # cleans up: what is read next comes from the store
        failure = job.failure()
        assert failure is not None
        assert (failure.cause, failure.exit_code) == (FailureCause.EXIT, 5)
        assert failure.reason.startswith("host 1 of 2: "), failure.reason
        assert "leaving with status 5" in job.tail(5, host=_failed_host(failure.reason))
        assert "leaving with status 5" not in job.tail(5, host=0), "the leader never ran it"
        # By default, the output of the host whose failure ended the job.
        assert "leaving with status 5" in job.tail(5)
    finally:
        gate.touch()


_TWO_HOSTS = next(n for n in valid_accelerator_names() if parse_accelerator(n).hosts == 2)


def _failed_host(reason: str) -> int | None:
    """The host a multi-host job's failure names (``host 1 of 2: exit 5``); None for one host."""
    named = re.match(r"host (\d+) of \d+: ", reason)
    return int(named.group(1)) if named else None


def test_a_job_that_fails_before_its_function_runs_names_the_phase(
    kinetic_backend: ScenarioBackend,
) -> None:
    job = kinetic_backend.decorate()(uf.add).run_async(uf.LoadsBadly())
    with pytest.raises(RuntimeError, match="cannot be loaded inside the job"):
        job.result()
    failure = job.failure()
    assert failure is not None
    assert (failure.cause, failure.phase) == (FailureCause.INFRASTRUCTURE, "deserialize")
    assert "failed in phase deserialize" in failure.reason


def test_a_cancelled_job_ends_with_cause_cancelled(
    kinetic_backend: ScenarioBackend, tmp_path: Path
) -> None:
    started = tmp_path / "started"
    job = kinetic_backend.decorate()(uf.hold).run_async(
        str(tmp_path / "never-opened"), started=str(started)
    )
    assert job.failure() is None  # pending or running: nothing ended yet
    wait_until(started.exists, "the job to start", timeout=60)
    job.cancel()
    assert job.status() is JobStatus.NOT_FOUND
    failure = job.failure()
    assert failure is not None
    assert (failure.cause, failure.reason) == (FailureCause.CANCELLED, "cancelled by the user")


def test_a_job_cleaned_up_after_it_failed_is_not_called_cancelled(
    kinetic_backend: ScenarioBackend,
) -> None:
    job = kinetic_backend.decorate()(uf.fail_with).run_async("kept", 1)
    job.wait()
    job.cancel()  # deletes the finished job's resource: not a cancellation
    assert job.failure() is None


def test_a_batch_counts_its_children_by_cause(
    kinetic_backend: ScenarioBackend, tmp_path: Path
) -> None:
    end_by = kinetic_backend.decorate()(uf.end_by)
    gate = str(tmp_path / "never-opened")
    batch = end_by.run_async_map(
        [{"how": "raise"}, {"how": "exit"}, {"how": "fine"}, {"how": "raise"}]
    )
    batch.results(return_exceptions=True, cleanup=False)
    assert batch.cause_counts() == {"user": 2, "exit": 1}
    causes = {job.group_index: job.failure().cause for job in batch.failures()}  # type: ignore[union-attr]
    assert causes == {0: FailureCause.USER, 1: FailureCause.EXIT, 3: FailureCause.USER}
    assert batch.status_counts() == {"FAILED": 3, "SUCCEEDED": 1}

    stopped = end_by.run_async_map(
        [{"how": "hold", "gate": gate}, {"how": "raise"}],
        fail_fast=True,
        cancel_running_on_fail=True,
    )
    stopped.results(return_exceptions=True, cleanup=False)
    assert stopped.cause_counts() == {"user": 1, "cancelled": 1}
    held = stopped.jobs[0]
    assert held is not None
    failure = held.failure()
    assert failure is not None and failure.cause is FailureCause.CANCELLED
    assert failure.reason, "the batch says why it cancelled the child"


def test_the_cli_shows_the_cause_in_json_and_in_tables(local_backend: ScenarioBackend) -> None:
    runner = CliRunner()
    kinetic_backend = local_backend
    job = kinetic_backend.decorate()(uf.exit_process).run_async(5)
    job.wait()
    shown = runner.invoke(cli, ["--backend", "local", "jobs", "status", job.job_id, "--json"])
    assert shown.exit_code == 0, shown.output
    document = json.loads(shown.stdout)
    assert document["failure"]["cause"] == "exit"
    assert document["failure"]["exit_code"] == 5
    table = runner.invoke(cli, ["--backend", "local", "jobs", "status", job.job_id])
    assert "Cause" in table.stdout and "exit (attempt 0)" in table.stdout

    batch = kinetic_backend.decorate()(uf.end_by).run_async_map([{"how": "raise"}, {"how": "x"}])
    batch.results(return_exceptions=True, cleanup=False)
    failures = runner.invoke(
        cli, ["--backend", "local", "batch", "failures", batch.group_id, "--json"]
    )
    assert failures.exit_code == 0, failures.output
    (entry,) = json.loads(failures.stdout)["failures"]
    assert (entry["index"], entry["cause"]) == (0, "user")
    assert entry["failure"]["reason"].endswith("ScenarioError: asked to fail (code 3)")
    status = runner.invoke(cli, ["--backend", "local", "batch", "status", batch.group_id, "--json"])
    assert json.loads(status.stdout)["causes"] == {"user": 1}
    assert (
        "cause: user"
        in runner.invoke(cli, ["--backend", "local", "batch", "failures", batch.group_id]).stdout
    )
