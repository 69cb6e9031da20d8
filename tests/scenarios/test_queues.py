"""Kueue admits every gke workload: jobs and batches wait in a visible line for quota, by
priority then in order, a higher priority preempts a lower one (which runs again and resumes),
and a slice is admitted whole or not at all.

The real Kueue controller runs on the test control plane (``kinetic_testing.controlplane``); each
test makes a scarce ClusterQueue of its own and LocalQueues for it in the test's namespace. The
node agent's GPU node has 4 L4s, more than those queues' quotas, so what holds jobs back is the
quota alone.
"""

import json
import time
import uuid
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

import gke_userfuncs
import host_group_userfuncs as hf
import kueue_userfuncs as qf
import pytest
import retry_userfuncs
from click.testing import CliRunner
from gke_env import GKE_IMAGE
from scenario_support import run_script, wait_until

import kinetic
from kinetic import JobStatus
from kinetic.cli import cli
from kinetic_protocol import ConfigError, ObjectNotFoundError
from kinetic_runtime.stores import open_store
from kinetic_testing.controlplane.cluster import ControlPlane
from kinetic_testing.controlplane.queues import ROOMY, cluster_queue, make_namespace_queue
from kinetic_testing.nodeagent import NodeAgent

pytestmark = [pytest.mark.realk8s, pytest.mark.gcs]

KUEUE = "/apis/kueue.x-k8s.io/v1beta2"


class Queues:
    """A scarce cluster queue of this test's own, and LocalQueues for it in its namespace."""

    def __init__(self, plane: ControlPlane, namespace: str) -> None:
        self.plane = plane
        self.namespace = namespace
        self.cluster_queue = f"cq-{uuid.uuid4().hex[:8]}"
        self.made = False

    def make(self, quota: dict[str, str], *local_queues: str) -> None:
        self.plane.request(
            "POST", f"{KUEUE}/clusterqueues", cluster_queue(self.cluster_queue, ROOMY | quota)
        )
        self.made = True
        for name in local_queues:
            make_namespace_queue(self.plane, self.namespace, name, self.cluster_queue)

    def set_quota(self, quota: dict[str, str]) -> None:
        path = f"{KUEUE}/clusterqueues/{self.cluster_queue}"
        current = self.plane.request("GET", path)
        wanted = cluster_queue(self.cluster_queue, ROOMY | quota)
        current["spec"]["resourceGroups"] = wanted["spec"]["resourceGroups"]
        self.plane.request("PUT", path, current)

    def workloads(self) -> list[dict[str, Any]]:
        listing = self.plane.request("GET", f"{KUEUE}/namespaces/{self.namespace}/workloads")
        return list(listing["items"])

    def delete(self) -> None:
        if self.made:
            self.plane.request("DELETE", f"{KUEUE}/clusterqueues/{self.cluster_queue}")


@pytest.fixture
def queues(gke_scenario_env: NodeAgent, real_k8s: ControlPlane, k8s_namespace: str) -> Any:
    made = Queues(real_k8s, k8s_namespace)
    yield made
    made.delete()


def _on_gpu(fn: Callable[..., Any], accelerator: str = "gpu-l4", **options: Any) -> Any:
    return kinetic.run(
        accelerator=accelerator, backend="gke", container_image=GKE_IMAGE, **options
    )(fn)


def _runs(directory: Path) -> dict[str, tuple[float, float]]:
    """When each logged run began and ended, by label (a run not ended yet: end = inf)."""
    runs = {}
    for path in directory.iterdir():
        times = dict(line.split() for line in path.read_text().splitlines())
        runs[path.name] = (float(times["start"]), float(times.get("end", "inf")))
    return runs


def _most_at_once(intervals: list[tuple[float, float, int]]) -> int:
    """The most GPUs held at one moment by runs ``(start, end, gpus)``."""
    edges = sorted(
        [(start, gpus) for start, _, gpus in intervals]
        + [(end, -gpus) for _, end, gpus in intervals],
        key=lambda edge: (edge[0], edge[1]),  # an end before a start at the same instant
    )
    held = most = 0
    for _, change in edges:
        held += change
        most = max(most, held)
    return most


def test_batches_wait_for_quota_and_start_by_priority_then_in_order(
    queues: Queues, tmp_path: Path
) -> None:
    queues.make({"nvidia.com/gpu": "1"}, "team-a", "team-b")
    log, gate = tmp_path / "runs", tmp_path / "gate"
    log.mkdir()
    blocker = _on_gpu(qf.hold_and_log, queue="team-a", priority="high")
    held = blocker.run_async(str(log), "hold", str(gate))
    wait_until((log / "hold").exists, "the blocker to hold the whole quota")

    def submit(queue: str, priority: str, name: str) -> kinetic.BatchHandle:
        remote = _on_gpu(qf.run_and_log, queue=queue, priority=priority)
        return remote.run_async_map([(str(log), name)])

    first_low = submit("team-a", "low", "a")
    # Kueue orders equal priorities by creation time, which Kubernetes keeps in whole seconds:
    # the later batches must be made in a later second than this one to come after it.
    created = wait_until(
        lambda: [
            w["metadata"]["creationTimestamp"] for w in queues.workloads() if not _admitted(w)
        ],
        "the first batch's workload",
    )
    made = datetime.fromisoformat(created[0].replace("Z", "+00:00")).timestamp()
    wait_until(lambda: time.time() >= made + 1, "the next second on the cluster's clock")
    high = submit("team-b", "high", "b")
    second_low = submit("team-a", "low", "c")
    wait_until(
        lambda: sum(1 for w in queues.workloads() if not _admitted(w)) == 3,
        "Kueue to hold the three batches back",
    )
    assert list(_runs(log)) == ["hold"], "nothing ran past the quota"
    gate.touch()
    for name, batch in zip("abc", (first_low, high, second_low), strict=True):
        assert batch.results(timeout=120) == [name]
    assert held.result(timeout=60) == "hold"

    runs = _runs(log)
    assert runs["b"][0] < runs["a"][0] < runs["c"][0], (
        "the high-priority batch first, then the two low ones in the order they came",
        runs,
    )
    gpus = [(start, end, 1) for start, end in runs.values()]
    assert _most_at_once(gpus) <= 1, f"the quota of 1 GPU was exceeded: {runs}"


def _admitted(workload: dict[str, Any]) -> bool:
    return any(
        c["type"] == "Admitted" and c["status"] == "True"
        for c in workload.get("status", {}).get("conditions") or []
    )


def test_a_100_input_batch_is_one_workload_running_max_concurrent_or_what_quota_allows(
    queues: Queues, tmp_path: Path
) -> None:
    queues.make({"nvidia.com/gpu": "2"}, "scarce")
    log, gate = tmp_path / "runs", tmp_path / "gate"
    log.mkdir()
    roomy = kinetic.run(accelerator="cpu", backend="gke", container_image=GKE_IMAGE)(
        qf.hold_and_log
    )
    batch = roomy.run_async_map(
        [(str(log), f"cpu{i}", str(gate)) for i in range(100)], max_concurrent=4
    )
    wait_until(lambda: len(list(log.iterdir())) == 4, "four inputs to run")
    scarce = _on_gpu(qf.hold_and_log, queue="scarce").run_async_map(
        [(str(log), f"gpu{i}", str(gate)) for i in range(3)]
    )
    wait_until(lambda: len(list(log.iterdir())) == 6, "two GPU inputs to run")

    (cpu_workload,) = [w for w in queues.workloads() if w["spec"]["queueName"] == "kinetic"]
    (gpu_workload,) = [w for w in queues.workloads() if w["spec"]["queueName"] == "scarce"]
    assert [p["count"] for p in cpu_workload["spec"]["podSets"]] == [4]
    admitted = gpu_workload["status"]["admission"]["podSetAssignments"]
    assert [p["count"] for p in admitted] == [2], "admitted in part: the quota holds 2 of 3"
    assert sorted(path.name for path in log.iterdir()) == sorted(
        [f"cpu{i}" for i in range(4)] + ["gpu0", "gpu1"]
    )
    batch.cancel()
    scarce.cancel()


def _checkpoint_step(store: Any) -> int:
    try:
        return int(json.loads(store.read(retry_userfuncs.CHECKPOINT))["step"])
    except ObjectNotFoundError:
        return 0


def test_a_higher_priority_job_preempts_a_lower_one_which_resumes_from_its_checkpoint(
    queues: Queues, tmp_path: Path
) -> None:
    queues.make({"nvidia.com/gpu": "1"}, "team-a")
    never = tmp_path / "never-opened"
    options = {
        "accelerator": "gpu-l4",
        "backend": "gke",
        "container_image": GKE_IMAGE,
        "queue": "team-a",
        "priority": "low",
    }
    submitted = run_script(
        f"""
        import sys
        sys.path.insert(0, {str(Path(retry_userfuncs.__file__).parent)!r})
        import kinetic
        import retry_userfuncs

        remote = kinetic.run(**{options!r})(retry_userfuncs.count_with_checkpoints)
        print("JOB", remote.run_async(6, [3], {str(never)!r}).job_id)
        """,
        tmp_path / "submitter",
        timeout=120,
    )
    low = kinetic.attach(submitted.stdout.split("JOB ", 1)[1].split()[0], backend="gke")
    checkpoints = open_store(low.output_location)
    wait_until(lambda: _checkpoint_step(checkpoints) == 3, "the low job's checkpoint of step 3")

    gate = tmp_path / "gate"
    high = _on_gpu(gke_userfuncs.hold_until, queue="team-a", priority="high").run_async(
        str(gate), "high"
    )
    preempted = wait_until(
        lambda: "preempted" in low.status_detail().detail and low.status_detail(),
        "the low job to read preempted and queued",
    )
    assert preempted.status is JobStatus.PENDING, (
        preempted.detail,
        queues.plane.request(
            "GET", f"/apis/batch/v1/namespaces/{queues.namespace}/jobs/{low.record.k8s_name}"
        )["status"],
    )
    assert preempted.preemptions == 1
    gate.touch()
    assert high.result(timeout=60) == "high"

    final = low.result(timeout=120, cleanup=False)
    assert final == {"step": 6, "sum": 21, "resumed_from": [0, 3]}
    state = low.status_detail()
    assert (state.status, state.preemptions) == (JobStatus.SUCCEEDED, 1)


def _host_step(store: Any, host: int) -> int:
    try:
        return int(json.loads(store.read(f"checkpoint-host-{host}.json"))["step"])
    except ObjectNotFoundError:
        return 0


def test_a_higher_priority_job_preempts_a_whole_jobset_whose_hosts_resume_from_checkpoints(
    queues: Queues, tmp_path: Path
) -> None:
    """Kueue admits a job of several hosts as one workload and preempts it whole: every host
    stops, the group waits in line, and once admitted again each host resumes from its own
    checkpoint."""
    queues.make({"cpu": "1"}, "team-a")  # the two hosts' 500m each: nothing else fits
    never, gate = tmp_path / "never-opened", tmp_path / "gate"
    low = kinetic.run(
        accelerator="cpu",
        nodes=2,
        backend="gke",
        container_image=GKE_IMAGE,
        queue="team-a",
        priority="low",
    )(hf.count_per_host_with_checkpoints).run_async(6, [3], str(never))
    checkpoints = open_store(low.output_location)
    wait_until(
        lambda: _host_step(checkpoints, 0) == _host_step(checkpoints, 1) == 3,
        "both hosts' checkpoints of step 3",
    )
    high = kinetic.run(
        accelerator="cpu", backend="gke", container_image=GKE_IMAGE, queue="team-a", priority="high"
    )(gke_userfuncs.hold_until).run_async(str(gate), "high")
    preempted = wait_until(
        lambda: "preempted" in low.status_detail().detail and low.status_detail(),
        "the low job to read preempted and queued",
    )
    assert (preempted.status, preempted.preemptions) == (JobStatus.PENDING, 1), preempted.detail
    gate.touch()
    assert high.result(timeout=60) == "high"

    final = low.result(timeout=120, cleanup=False)
    assert final == {"host": "0", "step": 6, "sum": 21, "resumed_from": [0, 3]}
    assert _host_step(checkpoints, 1) == 6
    assert low.status_detail().preemptions == 1
    low.cleanup()


def test_a_queued_jobs_place_in_line_is_reported_and_falls_as_those_ahead_finish(
    queues: Queues, tmp_path: Path
) -> None:
    queues.make({"nvidia.com/gpu": "1"}, "team-a")
    log = tmp_path / "runs"
    log.mkdir()
    remote = _on_gpu(qf.hold_and_log, queue="team-a")
    gates = [tmp_path / f"gate{i}" for i in range(3)]
    jobs = [remote.run_async(str(log), f"j{i}", str(gates[i])) for i in range(3)]
    wait_until((log / "j0").exists, "the first job to run")

    def places(waiting: list[int]) -> dict[int, int]:
        """Index of each waiting job by its place, once they all read the same count."""
        found = {}
        for i in waiting:
            place = jobs[i].status_detail().queue
            if place is None or place.position is None or place.waiting != len(waiting):
                return {}
            found[place.position] = i
        return found if sorted(found) == list(range(1, len(waiting) + 1)) else {}

    # Jobs made in the same second are in line in no particular order among themselves.
    line = wait_until(lambda: places([1, 2]), "two places in line")
    second = jobs[line[2]].status_detail()
    assert second.status is JobStatus.PENDING
    assert second.queue is not None and second.queue.cluster_queue == queues.cluster_queue
    assert second.queue.requested == {"nvidia.com/gpu": "1"}
    assert (second.queue.quota, second.queue.in_use) == (
        {"nvidia.com/gpu": "1"},
        {"nvidia.com/gpu": "1"},
    )
    assert second.detail.startswith(
        f"queued in team-a (cluster queue {queues.cluster_queue}): 2nd of 2, waiting for 1 "
        "nvidia.com/gpu (quota 1, 1 in use)"
    )
    shown = CliRunner().invoke(cli, ["--backend", "gke", "jobs", "status", jobs[line[2]].job_id])
    assert "2nd of 2" in shown.output, shown.output

    gates[0].touch()
    wait_until((log / f"j{line[1]}").exists, "the first in line to run")
    moved = wait_until(lambda: places([line[2]]), "the line to move up")
    assert moved == {1: line[2]}, "the second in line is next"
    for gate in gates:
        gate.touch()
    assert [job.result(timeout=120) for job in jobs] == ["j0", "j1", "j2"]


def test_an_unknown_queue_or_priority_is_refused_before_anything_is_uploaded(
    queues: Queues, gcs_bucket: str
) -> None:
    store = open_store(gcs_bucket)
    before = set(store.list(""))
    with pytest.raises(ConfigError, match=r"Queue 'nope' does not exist.*queues there: kinetic"):
        _on_gpu(gke_userfuncs.hold_until, queue="nope").run_async("x")
    with pytest.raises(ConfigError, match=r"Priority class 'urgent'.*high, low, normal"):
        _on_gpu(gke_userfuncs.hold_until, priority="urgent").run_async("x")
    assert set(store.list("")) == before


def test_a_two_host_slice_is_admitted_whole_or_not_at_all(
    pathways_scenario_env: NodeAgent, queues: Queues, tmp_path: Path, real_k8s: ControlPlane
) -> None:
    queues.make({"google.com/tpu": "4"}, "slices")  # half of what a 2-host slice asks for
    log, gate = tmp_path / "runs", tmp_path / "gate"
    log.mkdir()
    gate.touch()
    remote = kinetic.run(
        accelerator="tpu-v5litepod-2x4",
        backend="pathways",
        container_image=GKE_IMAGE,
        queue="slices",
    )(qf.hold_and_log)
    job = remote.run_async(str(log), "slice", str(gate))
    waiting = wait_until(
        lambda: (state := job.status_detail()).queue is not None and state,
        "the slice to wait in its queue",
    )
    assert waiting.status is JobStatus.PENDING
    assert waiting.queue is not None and waiting.queue.requested == {"google.com/tpu": "8"}
    pods = real_k8s.request("GET", f"/api/v1/namespaces/{queues.namespace}/pods")["items"]
    assert all(
        pod["spec"].get("schedulingGates") and not pod["spec"].get("nodeName") for pod in pods
    ), "no host of the slice may start before the whole slice is admitted"
    assert not list(log.iterdir())

    queues.set_quota({"google.com/tpu": "8"})
    assert job.result(timeout=120) == "slice"
