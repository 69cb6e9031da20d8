"""Pathways on a 4-host slice (``tpu-v5e-16``), end to end with the real runtime: the LWS
controller makes the pods, the node agent runs every host, results go through fake GCS.

The portable scenarios run on a 2-host slice through ``SCENARIO_BACKENDS``; these add the
4-host shape and what is specific to slices: a host killed or raising while the leader runs."""

from collections.abc import Callable
from pathlib import Path
from typing import Any

import batch_userfuncs as buf
import pytest
import scenario_funcs as sf
from scenario_support import ScenarioBackend, run_script, wait_until

import kinetic
from kinetic import JobStatus
from kinetic_testing.controlplane.cluster import ControlPlane
from kinetic_testing.nodeagent import NodeAgent

pytestmark = pytest.mark.realk8s
SHAPE = "tpu-v5e-16"


@pytest.fixture
def slices(pathways_scenario_env: NodeAgent) -> ScenarioBackend:
    return ScenarioBackend("pathways")


def on_slice(fn: Callable[..., Any]) -> Any:
    return kinetic.run(accelerator=SHAPE, backend="pathways", container_image="python:3.11-slim")(
        fn
    )


def test_a_job_runs_on_every_host_and_returns_the_leaders_value(slices: ScenarioBackend) -> None:
    job = on_slice(sf.env_snapshot).run_async("KINETIC_")
    snapshot = job.result(timeout=120, cleanup=False)
    assert snapshot["KINETIC_NUM_HOSTS"] == "4"
    assert snapshot["KINETIC_HOST_INDEX"] == "0"  # the leader; the LWS gave its index
    for host in range(4):
        assert "running env_snapshot" in (job.logs(host=host) or "")
    assert [h.job_id for h in kinetic.list_jobs() if h.backend == "pathways"] == [job.job_id]


def test_list_jobs_shows_gke_jobs_and_pathways_slices_together(
    slices: ScenarioBackend, tmp_path: Path
) -> None:
    gate = str(tmp_path / "gate")
    single = kinetic.run(accelerator="cpu", container_image="python:3.11-slim")(sf.hold)
    multi = kinetic.run(accelerator=SHAPE, container_image="python:3.11-slim")(sf.hold)
    jobs = [single.run_async(gate), multi.run_async(gate)]  # backend chosen by the shape
    assert [j.backend for j in jobs] == ["gke", "pathways"]
    listed = {h.job_id: h.backend for h in kinetic.list_jobs()}
    assert listed == {jobs[0].job_id: "gke", jobs[1].job_id: "pathways"}
    Path(gate).touch()
    assert [j.result(timeout=120) for j in jobs] == [None, None]


def test_a_batch_with_retries_re_runs_the_failed_slice(
    slices: ScenarioBackend, tmp_path: Path
) -> None:
    step = on_slice(buf.step)
    inputs = [
        {"value": 0},
        {"value": 1, "fail_first": str(tmp_path / "first-attempt-1")},
        {"value": 2},
    ]
    batch = step.run_async_map(inputs, retries=1)
    assert batch.results(timeout=240) == [0, 1, 2]


def test_cancel_stops_every_host(slices: ScenarioBackend, tmp_path: Path) -> None:
    started = tmp_path / "started"
    job = on_slice(sf.hold).run_async(str(tmp_path / "never"), None, str(started))
    wait_until(lambda: job.status() is JobStatus.RUNNING, "the slice to run", timeout=60)
    wait_until(started.exists, "a host to start the function", timeout=60)
    job.cancel()
    assert job.status() is JobStatus.NOT_FOUND


def test_attach_from_another_process_collects_the_result(
    slices: ScenarioBackend, tmp_path: Path
) -> None:
    job = on_slice(sf.add).run_async(2, 3)
    script = f"""
        import kinetic
        print("RESULT", kinetic.attach({job.job_id!r}).result(timeout=120, cleanup=False))
    """
    done = run_script(script, tmp_path, timeout=180)
    assert "RESULT 5" in done.stdout


def test_a_worker_that_raises_is_re_raised_with_its_host(slices: ScenarioBackend) -> None:
    job = on_slice(sf.fail_on_host).run_async(2, "bad shard")
    with pytest.raises(sf.ScenarioError, match="bad shard") as caught:
        job.result(timeout=120)
    assert any("on host 2 of 4" in note for note in caught.value.__notes__)
    assert job.status_detail().detail.startswith("host 2 of 4: exit 1")


@pytest.mark.parametrize("fault", ["oom_kill", "evict", "preempt_spot"])
def test_a_worker_killed_mid_run_fails_the_job_naming_the_host_and_stops_the_slice(
    slices: ScenarioBackend, pathways_scenario_env: NodeAgent, tmp_path: Path, fault: str
) -> None:
    started = tmp_path / "started"
    job = on_slice(sf.hold).run_async(str(tmp_path / "never"), None, str(started))
    wait_until(lambda: job.status() is JobStatus.RUNNING, "the slice to run", timeout=60)
    wait_until(started.exists, "the hosts to start the function", timeout=60)
    getattr(pathways_scenario_env, fault)(job.namespace, f"{job.k8s_name}-0-3")
    state = wait_until(
        lambda: (s := job.status_detail()).status.is_terminal and s, "the job to fail"
    )
    assert state.status is JobStatus.FAILED
    assert state.detail.startswith("host 3 of 4: "), state.detail
    with pytest.raises(kinetic.JobFailedError, match="host 3 of 4"):
        job.result(timeout=5)


def test_a_finished_slice_stops_itself_with_no_client_polling(
    slices: ScenarioBackend, real_k8s: ControlPlane, k8s_namespace: str
) -> None:
    """A detached 2-host job: nothing polls it after submission, yet its LeaderWorkerSet is
    scaled to zero with the outcome and every host's log tail recorded on it; a later
    attach still returns the value."""
    job = slices.decorate()(sf.add).run_async(2, 3)  # the scenarios' 2-host slice
    path = f"/apis/leaderworkerset.x-k8s.io/v1/namespaces/{k8s_namespace}/leaderworkersets/"

    def stopped() -> dict[str, Any] | None:
        found: dict[str, Any] = real_k8s.request("GET", path + job.k8s_name)
        return found if found["spec"]["replicas"] == 0 else None

    lws = wait_until(stopped, "the slice to stop itself", timeout=120)
    annotations = lws["metadata"]["annotations"]
    assert annotations["kinetic.dev/final-state"] == "SUCCEEDED"
    for host in range(2):
        assert "running add" in annotations[f"kinetic.dev/log-tail-{host}"]
    again = kinetic.attach(job.job_id)
    assert again.result(timeout=60, cleanup=False) == 5
    assert again.status() is JobStatus.SUCCEEDED
    assert "running add" in (again.logs(host=1) or "")


def test_a_failed_slice_stops_itself_with_no_client_polling(
    slices: ScenarioBackend, real_k8s: ControlPlane, k8s_namespace: str, tmp_path: Path
) -> None:
    """A detached 2-host job whose host 1 raises while the leader still runs (it waits on a
    gate that never opens): nothing polls it, yet host 1 records the failure as a client
    would (naming itself, with every host's last lines) and scales the set to zero, which
    ends the leader's run too."""
    remote = slices.decorate()(sf.fail_or_hold)
    job = remote.run_async(1, "bad shard", str(tmp_path / "never"))
    path = f"/apis/leaderworkerset.x-k8s.io/v1/namespaces/{k8s_namespace}/leaderworkersets/"

    def stopped() -> dict[str, Any] | None:
        found: dict[str, Any] = real_k8s.request("GET", path + job.k8s_name)
        return found if found["spec"]["replicas"] == 0 else None

    # Sooner than the leader's gate gives up (sf.GATE_TIMEOUT_S): its run never ends first.
    lws = wait_until(stopped, "the failed slice to stop itself", timeout=sf.GATE_TIMEOUT_S - 15)
    annotations = lws["metadata"]["annotations"]
    assert annotations["kinetic.dev/final-state"] == "FAILED"
    assert annotations["kinetic.dev/final-detail"] == "host 1 of 2: exit 1"
    assert annotations["kinetic.dev/final-exit-code"] == "1"
    assert annotations["kinetic.dev/final-cause"] == "exit"
    assert "bad shard" in annotations["kinetic.dev/log-tail-1"]
    assert "running fail_or_hold" in annotations["kinetic.dev/log-tail-0"]
    again = kinetic.attach(job.job_id)
    assert again.status_detail().detail == "host 1 of 2: exit 1"
    with pytest.raises(sf.ScenarioError, match="bad shard"):
        again.result(timeout=60, cleanup=False)
