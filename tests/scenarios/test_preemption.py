"""Retries by cause: a preempted attempt runs again as the same job (same id, same
``KINETIC_OUTPUT_DIR``) within ``preemption_retries``, with no client alive, and without
spending a batch's ``retries``; ``retry_on`` names the causes ``retries`` apply to, and
``unschedulable`` and ``image`` are not retried blindly.

The preemption is real on each backend: on ``gke`` the test kubelet reclaims the spot node
(SIGTERM, then the pod fails with ``DisruptionTarget``) and the real job controller starts a
new pod by the Job's pod failure policy; locally the runtime gets a SIGTERM that Kinetic did
not send (what a machine shutting down sends), and the supervisor runs the job again.
"""

import json
import os
import signal
from pathlib import Path
from typing import Any

import gke_userfuncs
import pytest
import retry_userfuncs as uf
from click.testing import CliRunner
from scenario_support import ScenarioBackend, run_script, wait_until

import kinetic
from kinetic import BatchError, FailureCause, JobStatus
from kinetic.cli import cli
from kinetic_protocol import ObjectNotFoundError, layout
from kinetic_runtime.local.supervisor import read_state
from kinetic_runtime.stores import open_store

pytestmark = pytest.mark.backends("local", "gke")

NO_NODE_ACCELERATOR = "gpu-h100"
"""No node of the test kubelet's default pools offers it: the pod is Unschedulable."""


class Preempter:
    """Takes the running attempt of a job away, as the backend's platform would."""

    def __init__(self, backend: ScenarioBackend, request: pytest.FixtureRequest) -> None:
        self.backend = backend
        self.request = request

    def preempt(self, job: kinetic.JobHandle) -> None:
        if self.backend.name == "gke":
            from kinetic_gke.labels import pod_selector

            agent = self.request.getfixturevalue("gke_scenario_env")
            namespace = self.request.getfixturevalue("k8s_namespace")
            fault = agent.preempt_spot(namespace, selector=pod_selector(job.record))
            wait_until(lambda: fault.hits, f"the spot preemption of {job.job_id}'s pod")
            return
        home: Path = self.request.getfixturevalue("isolated_kinetic")
        state = read_state(home / "local" / "jobs" / job.job_id)
        assert state is not None and state["phase"] == "RUNNING", state
        os.kill(state["pid"], signal.SIGTERM)


@pytest.fixture
def preempter(kinetic_backend: ScenarioBackend, request: pytest.FixtureRequest) -> Preempter:
    return Preempter(kinetic_backend, request)


def _checkpoint_step(store: Any) -> int:
    try:
        return int(json.loads(store.read(uf.CHECKPOINT))["step"])
    except ObjectNotFoundError:
        return 0


def _submit_and_exit(backend: ScenarioBackend, tmp_path: Path, **options: Any) -> str:
    """Submit the checkpointing job from a process that then exits; return its job id."""
    gate = tmp_path / "never-opened"
    done = run_script(
        f"""
        import sys
        sys.path.insert(0, {str(Path(uf.__file__).parent)!r})
        import kinetic
        import retry_userfuncs

        remote = kinetic.run(**{ {**backend.options, **options}!r})(
            retry_userfuncs.count_with_checkpoints
        )
        job = remote.run_async(9, [3, 6], {str(gate)!r})
        print("JOB", job.job_id)
        """,
        tmp_path / "submitter",
        timeout=120,
    )
    return done.stdout.split("JOB ", 1)[1].split()[0]


def test_a_preempted_job_runs_again_and_resumes_from_its_checkpoint_with_no_client_alive(
    kinetic_backend: ScenarioBackend, preempter: Preempter, tmp_path: Path
) -> None:
    job_id = _submit_and_exit(kinetic_backend, tmp_path, spot=True)
    job = kinetic.attach(job_id, backend=kinetic_backend.name)
    checkpoints = open_store(job.output_location)

    wait_until(lambda: _checkpoint_step(checkpoints) == 3, "the checkpoint of step 3", timeout=120)
    preempter.preempt(job)
    wait_until(lambda: _checkpoint_step(checkpoints) == 6, "the checkpoint of step 6", timeout=120)
    preempter.preempt(job)

    final = job.result(timeout=180, cleanup=False)
    assert final == {"step": 9, "sum": 45, "resumed_from": [0, 3, 6]}, (
        "the second and third runs resumed from the checkpoints of steps 3 and 6"
    )
    state = job.status_detail()
    assert (state.status, state.preemptions) == (JobStatus.SUCCEEDED, 2)
    assert job.attempt == 0 and job.failure() is None
    shown = CliRunner().invoke(cli, ["--backend", kinetic_backend.name, "jobs", "status", job_id])
    assert shown.exit_code == 0, shown.output
    assert "2 time(s), run again each time" in shown.output


def test_a_job_preempted_past_its_budget_fails_with_cause_preempted(
    kinetic_backend: ScenarioBackend, preempter: Preempter, tmp_path: Path
) -> None:
    gate = tmp_path / "never-opened"
    remote = kinetic_backend.decorate(spot=True, preemption_retries=1)(uf.count_with_checkpoints)
    job = remote.run_async(9, [1, 2], str(gate))
    checkpoints = open_store(job.output_location)
    wait_until(lambda: _checkpoint_step(checkpoints) == 1, "the checkpoint of step 1", timeout=120)
    preempter.preempt(job)
    wait_until(lambda: _checkpoint_step(checkpoints) == 2, "the checkpoint of step 2", timeout=120)
    preempter.preempt(job)

    with pytest.raises(kinetic.JobFailedError):
        job.result(timeout=180)
    failure = job.failure()
    assert failure is not None
    assert (failure.cause, failure.attempt) == (FailureCause.PREEMPTED, 0)
    assert job.status_detail().preemptions == 1


# -- a batch ------------------------------------------------------------------------------------


def test_a_preempted_child_runs_again_without_spending_retries(
    kinetic_backend: ScenarioBackend, preempter: Preempter, tmp_path: Path
) -> None:
    gate = tmp_path / "gate"
    remote = kinetic_backend.decorate(spot=True)(gke_userfuncs.square_after)
    batch = remote.run_async_map([(1, str(gate)), (2, str(gate)), (3, str(gate))], retries=0)
    held = wait_until(lambda: batch.jobs[1], "the second child's submission")
    wait_until(lambda: held.status() is JobStatus.RUNNING, "the second child to run", timeout=120)
    preempter.preempt(held)
    wait_until(
        lambda: (
            (state := held.status_detail()).preemptions == 1 and state.status is JobStatus.RUNNING
        ),
        "the preempted child to run again",
        timeout=120,
    )
    gate.touch()

    assert batch.results(timeout=180, cleanup=False) == [1, 4, 9]
    assert [job.attempt for job in batch.jobs if job is not None] == [0, 0, 0]
    assert batch.jobs[1] is held, "the same job ran again: no new attempt was submitted"
    assert batch.cause_counts() == {}


def test_retry_on_restricts_the_causes_retries_apply_to(
    kinetic_backend: ScenarioBackend, tmp_path: Path
) -> None:
    remote = kinetic_backend.decorate()(uf.fail_as)
    batch = remote.run_async_map(
        [("raise", str(tmp_path)), ("exit", str(tmp_path))], retries=2, retry_on=["exit"]
    )
    results = batch.results(timeout=180, return_exceptions=True, cleanup=False)
    assert isinstance(results[0], ValueError) and results[1] == "ok"
    assert [job.attempt for job in batch.jobs if job is not None] == [0, 1], (
        "the child that raised (user) was not retried; the one that exited was, once"
    )
    assert batch.cause_counts() == {"user": 1}
    store = kinetic_backend.store()
    assert not store.exists(layout.child_key(batch.group_id, 0, 1))


@pytest.mark.backends("gke")
@pytest.mark.parametrize("cause", [FailureCause.IMAGE, FailureCause.UNSCHEDULABLE])
def test_an_image_or_unschedulable_failure_is_not_retried_even_with_retries(
    kinetic_backend: ScenarioBackend,
    request: pytest.FixtureRequest,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    cause: FailureCause,
) -> None:
    """The same attempt again would meet the same missing image or capacity."""
    options: dict[str, Any] = {}
    if cause is FailureCause.IMAGE:
        agent = request.getfixturevalue("gke_scenario_env")
        agent.fail_image_pull(request.getfixturevalue("k8s_namespace"), times=None)
    else:
        monkeypatch.setenv("KINETIC_UNSCHEDULABLE_TIMEOUT", "1")
        options["accelerator"] = NO_NODE_ACCELERATOR
    remote = kinetic_backend.decorate(**options)(gke_userfuncs.hold_until)
    batch = remote.run_async_map([str(tmp_path / "never-opened")], retries=2)
    with pytest.raises(BatchError):
        batch.results(timeout=120, cleanup=False)
    (child,) = batch.jobs
    assert child is not None and child.attempt == 0
    assert batch.cause_counts() == {cause.value: 1}
    assert not kinetic_backend.store().exists(layout.child_key(batch.group_id, 0, 1))
