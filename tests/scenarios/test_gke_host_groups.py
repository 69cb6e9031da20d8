"""A job of several nodes on ``gke`` (issue 51), end to end with the real runtime: one JobSet
admitted by Kueue as one workload, made into a Job and pods by the real JobSet controller, its
hosts run by the node agent under the names JobSet gives them, results through fake GCS. The
JAX programs join across the JobSet's pods with ``jax.distributed.initialize()`` alone, the
PyTorch one with ``init_process_group("gloo")`` alone; host 0 serves on the ports the fixture
claimed (``KINETIC_HOST_GROUP_PORTS``), since the pods share this machine's network."""

import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest
import scenario_funcs as sf
from scenario_support import ScenarioBackend, wait_until

import kinetic
from kinetic_gke.k8s.kueue_api import QUEUE_LABEL
from kinetic_protocol import FailureCause, layout
from kinetic_testing import debian_torch
from kinetic_testing.controlplane.cluster import ControlPlane
from kinetic_testing.nodeagent import NodeAgent

pytestmark = pytest.mark.realk8s
NODE_POOL = "cloud.google.com/gke-nodepool"
JOBSETS = "/apis/jobset.x-k8s.io/v1alpha2/namespaces/{ns}/jobsets"
TORCH_IMAGE = "kinetic-tests/debian-torch:3.11"
"""The image the PyTorch scenario's pods name, which the node agent runs with ``torch_python``."""


@pytest.fixture
def gke(gke_scenario_env: NodeAgent) -> ScenarioBackend:
    return ScenarioBackend("gke")


@pytest.fixture(scope="module")
def torch_python(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A pod interpreter with Debian's PyTorch and this checkout's runtime, GCS client too."""
    venv = tmp_path_factory.mktemp("torch-python") / "venv"
    return str(debian_torch.torch_venv(venv, package="kinetic-runtime", extras=["gcs"]))


def on_two_nodes(fn: Any, image: str = "python:3.11-slim") -> Any:
    return kinetic.run(accelerator="cpu", nodes=2, backend="gke", container_image=image)(fn)


needs_jax = pytest.mark.skipif(
    importlib.util.find_spec("jax") is None, reason="jax[cpu] is not installed"
)


def _logged(job: Any, host: int, prefix: str) -> Any:
    line = next(t for t in (job.logs(host=host) or "").splitlines() if t.startswith(prefix))
    return json.loads(line.removeprefix(prefix))


def _jobsets(real_k8s: ControlPlane, namespace: str) -> list[dict[str, Any]]:
    return list(real_k8s.request("GET", JOBSETS.format(ns=namespace))["items"])


def test_a_two_node_job_runs_both_hosts_as_one_queued_jobset_and_returns_host_zeros_value(
    gke: ScenarioBackend, real_k8s: ControlPlane, k8s_namespace: str
) -> None:
    job = on_two_nodes(sf.env_snapshot).run_async("KINETIC_")
    snapshot = job.result(timeout=120, cleanup=False)
    assert (snapshot["KINETIC_NUM_HOSTS"], snapshot["KINETIC_HOST_INDEX"]) == ("2", "0")
    for host in range(2):
        assert "running env_snapshot" in (job.logs(host=host) or ""), host
    assert [h.job_id for h in kinetic.list_jobs()] == [job.job_id]
    (jobset,) = _jobsets(real_k8s, k8s_namespace)
    assert QUEUE_LABEL in jobset["metadata"]["labels"], "admitted through Kueue"
    assert jobset["status"]["restarts"] == 0
    service = f"/api/v1/namespaces/{k8s_namespace}/services/{jobset['metadata']['name']}"
    assert real_k8s.request("GET", service)["spec"]["clusterIP"] == "None"

    job.cleanup()
    assert _jobsets(real_k8s, k8s_namespace) == []
    services = real_k8s.request("GET", f"/api/v1/namespaces/{k8s_namespace}/services")
    assert services["items"] == [], "the headless service goes with its JobSet"


def test_a_host_that_raises_fails_the_job_with_its_traceback_and_cause_user(
    gke: ScenarioBackend, real_k8s: ControlPlane, k8s_namespace: str, tmp_path: Path
) -> None:
    """Host 1 raises while host 0 waits: the group fails as host 1's error, and host 0's
    output still reads once the cluster has deleted its pod with the failed group."""
    job = on_two_nodes(sf.fail_or_hold).run_async(1, "bad shard", str(tmp_path / "never"))
    with pytest.raises(sf.ScenarioError, match="bad shard") as caught:
        job.result(timeout=120, cleanup=False)
    assert any("on host 1 of 2" in note for note in caught.value.__notes__)
    state = job.status_detail()
    assert state.detail.startswith("host 1 of 2: exit 1"), state.detail
    assert job.failure().cause is FailureCause.USER
    (jobset,) = _jobsets(real_k8s, k8s_namespace)
    assert jobset["status"]["restarts"] == 0, "a user error does not run the group again"
    assert "bad shard" in (job.logs() or ""), "the failing host's output by default"
    host_0 = f"kinetic.dev/job-id={job.job_id},batch.kubernetes.io/job-completion-index=0"
    pods = f"/api/v1/namespaces/{k8s_namespace}/pods?labelSelector={host_0}"
    wait_until(lambda: not real_k8s.request("GET", pods)["items"], "host 0's pod to go")
    assert "running fail_or_hold" in (job.logs(host=0) or "")
    every = job.logs(host="all") or ""
    assert "[host 0] [kinetic] job" in every, every
    assert any(line.startswith("[host 1] ") and "bad shard" in line for line in every.split("\n"))


def test_a_host_taken_away_runs_the_whole_group_again_which_resumes_from_its_checkpoint(
    gke: ScenarioBackend, gke_scenario_env: NodeAgent, tmp_path: Path
) -> None:
    """A spot reclaim of host 1 fails its Job as a disruption: JobSet runs both hosts again
    in new pods (the group's second run), which find the first run's checkpoint and resume
    from it. Host 1 raised when stopped, so the first run left its failure stored: the second
    run's success is the job's outcome all the same."""
    import host_group_userfuncs as uf

    checkpoint, started = tmp_path / "checkpoint", tmp_path / "started"
    job = on_two_nodes(uf.train_from_checkpoint).run_async(str(checkpoint), str(started))
    wait_until(
        lambda: checkpoint.exists() and started.exists(),
        "the first run to save its checkpoint with host 1 running",
        timeout=60,
    )
    host_1 = f"kinetic.dev/job-id={job.job_id},batch.kubernetes.io/job-completion-index=1"
    gke_scenario_env.preempt_spot(job.namespace, selector=host_1)
    assert job.result(timeout=60, cleanup=False) == {"resumed_from": 1, "run": "1"}
    assert job.status_detail().preemptions == 1
    first_run = layout.host_result_key(job.job_id, 1)
    assert gke.store().exists(first_run), "host 1's failure in the first run was stored"
    job.cleanup()


def test_a_group_past_its_timeout_fails_with_cause_timeout_and_keeps_each_hosts_output(
    gke: ScenarioBackend, gke_scenario_env: NodeAgent, tmp_path: Path
) -> None:
    """Every host's pod has the run's timeout as its deadline: past it, the group fails with
    cause timeout, not as taken away, and no run of it starts again."""
    remote = kinetic.run(
        accelerator="cpu", nodes=2, backend="gke", container_image="python:3.11-slim", timeout=3
    )(sf.print_then_hold)
    job = remote.run_async(["before the timeout"], str(tmp_path / "never-opened"))
    with pytest.raises(kinetic.JobFailedError):
        job.result(timeout=120, cleanup=False)
    failure = job.failure()
    assert failure is not None and failure.cause is FailureCause.TIMEOUT, failure
    assert job.status_detail().preemptions == 0
    for host in (0, 1):
        assert "before the timeout" in (job.logs(host=host) or "")
    job.cleanup()


def test_two_tpu_slices_run_at_once_each_in_a_node_pool_of_its_own(
    gke: ScenarioBackend, real_k8s: ControlPlane, k8s_namespace: str, tmp_path: Path
) -> None:
    """Multislice: a Job per slice, which JobSet's exclusive placement keeps in a node pool of
    its own while both run (2 slices of 2 hosts)."""
    gate = tmp_path / "gate"
    remote = kinetic.run(
        accelerator="tpu-v5e-8-multihost",
        slices=2,
        backend="gke",
        container_image="python:3.11-slim",
    )(sf.hold)
    job = remote.run_async(str(gate), "done")
    wait_until(lambda: job.status().value == "RUNNING", "both slices to run", timeout=60)
    pods = real_k8s.request("GET", f"/api/v1/namespaces/{k8s_namespace}/pods")["items"]
    nodes = real_k8s.request("GET", "/api/v1/nodes")["items"]
    pool_of = {node["metadata"]["name"]: node["metadata"]["labels"][NODE_POOL] for node in nodes}
    pools: dict[str, set[str]] = {}
    for pod in pods:
        slice_index = pod["metadata"]["labels"]["jobset.sigs.k8s.io/job-global-index"]
        pools.setdefault(slice_index, set()).add(pool_of[pod["spec"]["nodeName"]])
    assert sorted(pools) == ["0", "1"]
    assert all(len(pool) == 1 for pool in pools.values()), "a slice's hosts share its pool"
    assert pools["0"] != pools["1"], "and no other slice's"
    gate.touch()
    assert job.result(timeout=60) == "done"


@needs_jax
def test_a_jax_program_sums_across_the_pods_of_a_two_node_jobset(gke: ScenarioBackend) -> None:
    """Each pod's runtime is a JAX process of 2 CPU devices; ``initialize()`` with no
    arguments joins them through host 0's stable name, and the psum spans all 4 devices."""
    import host_group_userfuncs as uf

    job = on_two_nodes(uf.two_node_psum).run_async()
    value = job.result(timeout=120, cleanup=False)
    assert value["psum"] == 6.0, "2 devices of host 0 add 1 each, 2 of host 1 add 2 each"
    assert (value["processes"], value["devices"], value["local_devices"]) == (2, 4, 2)
    worker = _logged(job, 1, "host 1 torch ")
    assert (worker["RANK"], worker["WORLD_SIZE"]) == ("1", "2")
    assert worker["MASTER_PORT"] == value["torch"]["MASTER_PORT"]
    job.cleanup()


@pytest.mark.skipif(not debian_torch.available(), reason=debian_torch.SKIP_REASON)
def test_a_pytorch_program_all_reduces_over_gloo_across_the_pods_of_a_two_node_jobset(
    gke: ScenarioBackend, gke_scenario_env: NodeAgent, torch_python: str
) -> None:
    """The pods name an image whose ``python`` the node agent runs as ``torch_python`` (as a
    kubelet runs the image a pod names); ``init_process_group`` reads the rendezvous from the
    environment JobSet's pods are given, and the gloo sum spans both."""
    import host_group_userfuncs as uf

    gke_scenario_env.pythons[TORCH_IMAGE] = torch_python
    job = on_two_nodes(uf.two_node_all_reduce, image=TORCH_IMAGE).run_async()
    value = job.result(timeout=120, cleanup=False)
    assert (value["sum"], value["rank"], value["world"]) == (3.0, 0, 2), "1 from host 0, 2 from 1"
    assert Path(value["torch"]).is_relative_to(debian_torch.DEBIAN_TORCH), "Debian's torch ran"
    assert _logged(job, 1, "host 1 all_reduce ") == {"sum": 3.0, "rank": 1, "world": 2}
    job.cleanup()


@needs_jax
def test_a_two_slice_jax_program_sees_its_slice_and_every_slices_devices(
    gke: ScenarioBackend,
) -> None:
    """2 TPU-shaped slices of 2 hosts (CPU processes standing in): each host sees 2 slices,
    its own slice id, and the 8 devices of the 4 processes; host 0's view is the result."""
    import host_group_userfuncs as uf

    remote = kinetic.run(
        accelerator="tpu-v5e-8-multihost",
        slices=2,
        backend="gke",
        container_image="python:3.11-slim",
    )(uf.slice_view)
    job = remote.run_async()
    leader = job.result(timeout=120, cleanup=False)
    views = [_logged(job, host, "slice view ") for host in range(4)]
    assert leader == views[0]
    assert [(v["slice"], v["process"]) for v in views] == [("0", 0), ("0", 1), ("1", 2), ("1", 3)]
    assert {(v["slices"], v["devices"]) for v in views} == {("2", 8)}
    job.cleanup()
