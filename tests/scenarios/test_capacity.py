"""A job given several choices of accelerator or capacity runs on the first whose quota is free,
and says which it got.

The real Kueue controller runs on the test control plane with the flavors and cluster queue
``kinetic up`` makes (``kinetic_gke.provision.kueue_objects``) for three one-GPU pools of the
node agent: an L4 on spot, an L4 on demand and a T4 on demand. Each flavor's quota is one GPU,
so a job that holds one flavor sends the next to the following one.
"""

import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import kueue_userfuncs as qf
import pytest
from click.testing import CliRunner
from gke_env import GKE_IMAGE
from queue_support import own_queue
from scenario_support import wait_until

import kinetic
from kinetic import JobHandle, JobStatus
from kinetic.cli import cli
from kinetic_gke.labels import pod_selector
from kinetic_gke.pools import PoolHardware, PoolInfo
from kinetic_protocol.capacity import Placement
from kinetic_testing.controlplane.cluster import ControlPlane
from kinetic_testing.nodeagent import NodeAgent

pytestmark = [pytest.mark.realk8s, pytest.mark.gcs]

L4 = PoolHardware("g2-standard-4", "nvidia-l4", 1)
POOLS = [  # the node agent's pools, each with room for one job of one GPU
    PoolInfo("gpu-l4-spot-pool", L4, spot=True, node_count=1),
    PoolInfo("gpu-l4-pool", L4, node_count=1),
    PoolInfo("gpu-t4-pool", PoolHardware("n1-standard-4", "nvidia-tesla-t4", 1), node_count=1),
]


@pytest.fixture
def queue(gke_scenario_env: NodeAgent, real_k8s: ControlPlane, k8s_namespace: str) -> Iterator[str]:
    """A queue of this test's own over the three pools' flavors, as `kinetic up` makes them."""
    with own_queue(real_k8s, k8s_namespace, POOLS) as name:
        yield name


def _holding(queue: str, **options: Any) -> Callable[..., JobHandle]:
    """``run_async`` of a job that holds its GPU until a file exists."""
    remote = kinetic.run(backend="gke", container_image=GKE_IMAGE, queue=queue, **options)(
        qf.hold_and_log
    )
    return remote.run_async  # type: ignore[return-value]


def _placed(job: JobHandle) -> Placement:
    def placement() -> Placement | None:
        state = job.status_detail()
        return state.placement if state.status is JobStatus.RUNNING else None

    return wait_until(placement, f"job {job.job_id} to run")


def _node_of(plane: ControlPlane, namespace: str, job: JobHandle) -> str:
    """The node the running pod of ``job``'s Job (for a batch's input, its array's) is on."""
    selector = f"labelSelector=batch.kubernetes.io/job-name={job.record.k8s_name}"
    running = "fieldSelector=status.phase=Running"
    pods = plane.request("GET", f"/api/v1/namespaces/{namespace}/pods?{selector}&{running}")
    return str(pods["items"][0]["spec"]["nodeName"])


def test_a_fallback_list_runs_on_the_next_accelerator_while_the_first_is_in_use(
    queue: str, tmp_path: Path, real_k8s: ControlPlane, k8s_namespace: str
) -> None:
    run = _holding(queue, accelerator=["gpu-l4", "gpu-t4"])
    first = run(str(tmp_path), "first", str(tmp_path / "release-first"))
    assert _placed(first) == Placement(
        accelerator="gpu-l4", capacity="on-demand", flavor="gpu-l4-pool"
    )
    second = run(str(tmp_path), "second", str(tmp_path / "release-second"))
    assert _placed(second) == Placement(
        accelerator="gpu-t4", capacity="on-demand", flavor="gpu-t4-pool"
    )
    assert _node_of(real_k8s, k8s_namespace, second) == "gpu-t4-0"
    shown = CliRunner().invoke(cli, ["--backend", "gke", "jobs", "status", second.job_id])
    assert shown.exit_code == 0, shown.output
    assert "Accelerator: gpu-l4 or gpu-t4" in shown.output
    assert "Placed:      gpu-t4 (on-demand, flavor gpu-t4-pool)" in shown.output
    assert "RUNNING (on gpu-t4 (on-demand, flavor gpu-t4-pool))" in shown.output
    assert re.search(r"Used:\s+\S+ GPU-hours, \$\S+ at list prices", shown.output)
    usage = json.loads(
        CliRunner()
        .invoke(cli, ["--backend", "gke", "jobs", "status", second.job_id, "--json"])
        .output
    )["usage"]
    assert usage["unit"] == "GPU" and usage["list_cost_usd"] >= 0 and usage["prices"]["as_of"]

    (tmp_path / "release-first").touch()
    assert first.result(timeout=60) == "first"
    third = run(str(tmp_path), "third", str(tmp_path / "release-third"))
    assert _placed(third).accelerator == "gpu-l4", "the first choice is free again"
    assert _node_of(real_k8s, k8s_namespace, third) == "gpu-l4-0"
    for name, job in (("second", second), ("third", third)):
        (tmp_path / f"release-{name}").touch()
        assert job.result(timeout=60) == name


def test_spot_then_on_demand_takes_on_demand_once_the_spot_quota_is_used(
    queue: str, tmp_path: Path, real_k8s: ControlPlane, k8s_namespace: str
) -> None:
    remote = kinetic.run(
        backend="gke",
        container_image=GKE_IMAGE,
        queue=queue,
        accelerator="gpu-l4",
        capacity=["spot", "on-demand"],
    )(qf.hold_and_log)
    gate = str(tmp_path / "release")
    on_spot = remote.run_async(str(tmp_path), "spot", gate)
    assert _placed(on_spot) == Placement(
        accelerator="gpu-l4", capacity="spot", flavor="gpu-l4-spot-pool"
    )
    assert _node_of(real_k8s, k8s_namespace, on_spot) == "gpu-l4-spot-0"
    batch = remote.run_async_map([(str(tmp_path), "on-demand", gate)])
    child = wait_until(lambda: batch.jobs[0], "the batch's input to be submitted")
    child_placed = _placed(child)
    assert child_placed.capacity == "on-demand"
    assert _node_of(real_k8s, k8s_namespace, child) == "gpu-l4-0"
    shown = CliRunner().invoke(cli, ["--backend", "gke", "batch", "status", batch.group_id])
    assert shown.exit_code == 0, shown.output
    assert re.search(r"gpu-l4 \(on-demand\)\s+1\s+0", shown.output), shown.output
    (tmp_path / "release").touch()
    assert on_spot.result(timeout=60) == "spot"
    assert batch.results(timeout=60) == ["on-demand"]  # collected and cleaned up
    assert child.status_detail().placement == child_placed, "kept with the batch"
    timeline = batch.timeline()
    assert [a.placement for a in timeline.attempts] == [child_placed]
    assert "placed: 1 on gpu-l4 (on-demand)" in timeline.summary().describe()


def test_a_batch_stops_submitting_at_its_max_cost_and_resume_with_a_higher_cap_runs_the_rest(
    queue: str, tmp_path: Path
) -> None:
    """The cap is far below what a second of a GPU costs, so the batch stops once its first
    two inputs (one on each flavor: the L4's quota holds one) have run at all; the third is
    reported as not run because of it, and runs once ``resume`` raises the cap."""
    remote = kinetic.run(
        backend="gke", container_image=GKE_IMAGE, queue=queue, accelerator=["gpu-l4", "gpu-t4"]
    )(qf.hold_and_log)
    gate = str(tmp_path / "release")
    labels = ["a", "b", "c"]
    batch = remote.run_async_map(
        [(str(tmp_path), label, gate) for label in labels], max_concurrent=2, max_cost=1e-9
    )
    running = [wait_until(lambda i=i: batch.jobs[i], f"input {i} to be submitted") for i in (0, 1)]
    placed = {_placed(job).flavor for job in running}
    assert placed == {"gpu-l4-pool", "gpu-t4-pool"}, "one input on each flavor"
    batch.wait_submitted(timeout=60)
    completion = batch.submission_status().completion
    assert completion is not None and "reached max_cost=$1e-09" in completion.cost_capped
    assert batch.jobs[2] is None, "nothing is submitted past the cap"
    shown = CliRunner().invoke(cli, ["--backend", "gke", "batch", "status", batch.group_id])
    assert shown.exit_code == 0, shown.output
    assert "reached max_cost=$1e-09" in shown.output and "UNSUBMITTED" in shown.output
    assert re.search(r"Used:\s+\S+ GPU-hours, \$\S+ at list prices", shown.output), shown.output
    unread = CliRunner().invoke(
        cli, ["--backend", "gke", "batch", "status", batch.group_id, "--no-usage"]
    )
    assert re.search(r"Used:\s+not read for 3 inputs \(--usage reads it\)", unread.output)

    (tmp_path / "release").touch()
    outcomes = batch.results(timeout=60, return_exceptions=True)
    assert outcomes[:2] == ["a", "b"]
    assert "was never submitted: max_cost stopped the batch" in str(outcomes[2])
    still_capped = batch.resume(max_cost=2e-9)
    assert "nothing more is submitted" in still_capped and batch.jobs[2] is None

    assert "Resumed batch" in batch.resume(max_cost=100.0)
    assert batch.results(timeout=60) == labels
    timeline = batch.timeline()
    assert len({a.placement for a in timeline.attempts}) == 2, "inputs ran on two flavors"
    usage = timeline.summary().usage
    assert usage is not None and usage.unit == "GPU" and usage.list_cost, usage


def test_a_preempted_spot_attempt_runs_again_on_the_spot_flavor_it_was_admitted_on(
    queue: str,
    tmp_path: Path,
    real_k8s: ControlPlane,
    k8s_namespace: str,
    gke_scenario_env: NodeAgent,
) -> None:
    """A spot reclaim takes the pod away, not the admission: Kueue picks a flavor only when it
    admits a Workload, and a pod the node lost neither suspends the Job nor evicts the
    Workload. The job controller's next pod (within ``preemption_retries``) keeps the node
    selector Kueue wrote for the spot flavor, so the job runs again on spot, not on demand;
    here on the same spot node, which the node agent keeps after reclaiming its pod."""
    run = _holding(queue, accelerator="gpu-l4", capacity=["spot", "on-demand"])
    job = run(str(tmp_path), "spot", str(tmp_path / "release"))
    runs = tmp_path / "spot"
    on_spot = Placement(accelerator="gpu-l4", capacity="spot", flavor="gpu-l4-spot-pool")
    assert _placed(job) == on_spot
    wait_until(runs.exists, "the function to start")
    fault = gke_scenario_env.preempt_spot(k8s_namespace, selector=pod_selector(job.record))
    wait_until(lambda: fault.hits, f"the spot preemption of {job.job_id}'s pod")
    wait_until(lambda: runs.read_text().count("start") == 2, "the function to run again")

    assert _placed(job) == on_spot, "run again on spot, not on demand"
    assert job.status_detail().preemptions == 1
    assert _node_of(real_k8s, k8s_namespace, job) == "gpu-l4-spot-0"
    shown = CliRunner().invoke(cli, ["--backend", "gke", "jobs", "status", job.job_id])
    assert shown.exit_code == 0, shown.output
    assert "RUNNING (on gpu-l4 (spot, flavor gpu-l4-spot-pool))" in shown.output
    assert "Capacity:    spot, then on-demand" in shown.output
    assert "Placed:      gpu-l4 (spot, flavor gpu-l4-spot-pool)" in shown.output
    assert "Preempted:   1 time(s), run again each time" in shown.output
    (tmp_path / "release").touch()
    assert job.result(timeout=60, cleanup=False) == "spot"
    assert job.status_detail().preemptions == 1
