"""A flex-start job waits for its provisioning request, runs once it is provisioned, and ends
with cause ``unschedulable`` and the request's message when it fails or is revoked.

The real Kueue controller runs its provisioning admission check with the objects ``kinetic
up`` makes for a flex-start pool (``kinetic_gke.provision.kueue_objects``); the test plays
GKE's autoscaler through :class:`kinetic_testing.controlplane.provisioner.StandInProvisioner`.
The pool's node (the node agent's ``gpu-l4-flex-0``) exists from the start.
"""

import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import kueue_userfuncs as qf
import pytest
from gke_env import GKE_IMAGE
from queue_support import own_queue
from scenario_support import wait_until

import kinetic
from kinetic import FailureCause, JobFailedError, JobHandle, JobStatus
from kinetic_gke.pools import PoolHardware, PoolInfo
from kinetic_testing.controlplane.cluster import ControlPlane
from kinetic_testing.controlplane.provisioner import StandInProvisioner
from kinetic_testing.nodeagent import NodeAgent

pytestmark = [pytest.mark.realk8s, pytest.mark.gcs]

FLEX_POOL = PoolInfo(
    "gpu-l4-flex-pool", PoolHardware("g2-standard-4", "nvidia-l4", 1), node_count=1,
    flex_start=True,
)  # fmt: skip


@pytest.fixture
def queue(gke_scenario_env: NodeAgent, real_k8s: ControlPlane, k8s_namespace: str) -> Iterator[str]:
    """A queue of this test's own over the flex-start pool's flavor, as `kinetic up` makes it."""
    with own_queue(real_k8s, k8s_namespace, [FLEX_POOL]) as name:
        yield name


def _flex(queue: str, function: Callable[..., str], **options: Any) -> Callable[..., JobHandle]:
    remote = kinetic.run(
        backend="gke", container_image=GKE_IMAGE, queue=queue, accelerator="gpu-l4",
        capacity="flex-start", **options,
    )(function)  # fmt: skip
    return remote.run_async  # type: ignore[return-value]


def _detail_when(job: JobHandle, status: JobStatus) -> str:
    def reached() -> str:
        state = job.status_detail()
        return state.detail if state.status is status else ""

    return wait_until(reached, f"job {job.job_id} to be {status.value}")


def test_a_flex_start_job_waits_for_its_request_bounded_then_runs_once_provisioned(
    queue: str, tmp_path: Path, real_k8s: ControlPlane, k8s_namespace: str
) -> None:
    provisioner = StandInProvisioner(real_k8s, k8s_namespace)
    job = _flex(queue, qf.run_and_log, max_run_duration=3600)(str(tmp_path), "flex")
    name = provisioner.next_request()
    assert provisioner.read(name)["spec"]["parameters"] == {"maxRunDurationSeconds": "3600"}
    provisioner.accept(name)
    waiting = re.compile(
        rf"waiting for capacity: flex-start request {name} accepted, not provisioned yet "
        r"\(for \d+s\)"
    )
    wait_until(
        lambda: waiting.fullmatch(job.status_detail().detail), "the accepted request's status"
    )
    assert not (tmp_path / "flex.log").exists(), "not run before its nodes are provisioned"
    provisioner.provision(name)
    assert job.result(timeout=60) == "flex"


@pytest.mark.parametrize("ending", ["fail", "revoke"])
def test_a_failed_or_revoked_request_ends_the_job_unschedulable_with_its_message(
    ending: str, queue: str, tmp_path: Path, real_k8s: ControlPlane, k8s_namespace: str
) -> None:
    provisioner = StandInProvisioner(real_k8s, k8s_namespace)
    job = _flex(queue, qf.hold_and_log)(str(tmp_path), "flex", str(tmp_path / "never"))
    name = provisioner.next_request()
    message = f"GKE says no ({ending})"
    if ending == "fail":
        provisioner.accept(name)
        provisioner.fail(name, message)
    else:
        provisioner.provision(name)
        _detail_when(job, JobStatus.RUNNING)
        provisioner.revoke(name, message)
    detail = _detail_when(job, JobStatus.FAILED)
    verb = "failed" if ending == "fail" else "had its capacity revoked"
    assert detail == f"flex-start request {name} {verb}: {message}"
    failure = job.failure()
    assert failure is not None and failure.cause is FailureCause.UNSCHEDULABLE, failure
    with pytest.raises(JobFailedError, match=re.escape(message)):
        job.result(timeout=30)
    k8s_job = real_k8s.request(
        "GET", f"/apis/batch/v1/namespaces/{k8s_namespace}/jobs/{job.record.k8s_name}"
    )
    assert k8s_job["spec"]["suspend"] is True, "Kueue took the job off its nodes"
