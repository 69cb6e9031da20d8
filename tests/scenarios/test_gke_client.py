"""The ``gke`` backend through the ``kinetic`` client, the runtime and fake-gcs-server, on the
real control plane: what a user sees when the cluster misbehaves, what a batch with retries
does about it, and the promises about polling, discovery and the kubeconfig.

The node agent injects the pod faults a kubelet reports; API failures and request counting go
through ``ApiProxy`` (``gke_api_proxy``). User functions live in ``gke_userfuncs``, which the
pods import from the code bundle.
"""

import hashlib
import json
import operator
import os
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import cloudpickle
import gke_userfuncs as uf
import msgspec
import pytest
from gke_env import GKE_IMAGE, GKE_PROJECT
from kubernetes import client
from kubernetes.client.exceptions import ApiException

import kinetic
import kinetic_gke
from kinetic import BatchError, FailureCause, JobFailedError
from kinetic_gke import GKEBackend
from kinetic_gke.labels import COMPLETION_INDEX, group_selector, job_selector
from kinetic_protocol import (
    ArtifactRef,
    BackendError,
    BackendSettings,
    CallDescriptor,
    ConfigError,
    JobRecord,
    JobStatus,
    Succeeded,
    layout,
)
from kinetic_protocol.signing import seal_json
from kinetic_runtime.stores import open_store
from kinetic_testing.controlplane.cluster import ControlPlane
from kinetic_testing.controlplane.proxy import ApiFault, ApiProxy
from kinetic_testing.nodeagent import NodeAgent
from kinetic_testing.signed import keyring_of, open_result, seal_job_record

pytestmark = [pytest.mark.realk8s, pytest.mark.gcs]

HOLD_POD = (
    "python",
    "-c",
    "import time\nprint('started', flush=True)\nwhile True: time.sleep(0.05)",
)
NO_NODE_ACCELERATOR = "gpu-h100"
"""No node of the agent's default pools offers it: the pod is Unschedulable."""


class Jobs:
    """The namespace's Jobs, read with the admin client (never through the proxy)."""

    def __init__(self, api: Any, namespace: str) -> None:
        self.batch = client.BatchV1Api(api)
        self.namespace = namespace

    def get(self, name: str) -> dict[str, Any] | None:
        try:
            raw = self.batch.read_namespaced_job(name, self.namespace, _preload_content=False)
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise
        data: dict[str, Any] = json.loads(raw.data)
        return data

    def names(self) -> list[str]:
        raw = self.batch.list_namespaced_job(self.namespace, _preload_content=False)
        return [job["metadata"]["name"] for job in json.loads(raw.data)["items"]]


@pytest.fixture
def jobs(real_k8s: ControlPlane, k8s_namespace: str) -> Iterator[Jobs]:
    api = real_k8s.api_client()
    yield Jobs(api, k8s_namespace)
    api.close()


def _remote(fn: Callable[..., Any], accelerator: str = "cpu", **options: Any) -> Any:
    return kinetic.run(
        accelerator=accelerator, backend="gke", container_image=GKE_IMAGE, **options
    )(fn)


def _record(job_id: str, bucket: str, namespace: str, **fields: Any) -> JobRecord:
    record = JobRecord(
        job_id=job_id,
        backend="gke",
        project=GKE_PROJECT,
        cluster_name="kinetic-cluster",
        zone="us-central1-a",
        namespace=namespace,
        bucket_name=bucket.removeprefix("gs://"),
        k8s_name=job_id,
        image_uri=GKE_IMAGE,
        accelerator="cpu",
        func_name="train",
        display_name="train on cpu",
        created_at="2026-11-22T10:00:00+00:00",
    )
    return msgspec.structs.replace(record, **fields)


def _open_when(condition: Callable[[], object], gate: Path) -> threading.Thread:
    def opener() -> None:
        deadline = time.monotonic() + 60
        while not condition() and time.monotonic() < deadline:
            time.sleep(0.01)
        gate.touch()

    thread = threading.Thread(target=opener, daemon=True)
    thread.start()
    return thread


def _wait_for(check: Callable[[], object], message: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {message}"
        time.sleep(0.05)


# -- what a user sees --------------------------------------------------------------------------


def test_the_client_without_a_project_says_how_to_set_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("KINETIC_PROJECT", "GOOGLE_CLOUD_PROJECT", "KINETIC_STORE", "KINETIC_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("KINETIC_PROFILES_FILE", str(tmp_path / "profiles.json"))
    with pytest.raises(ConfigError, match="needs a GCP project"):
        kinetic.list_jobs(backend="gke")


@pytest.mark.parametrize(
    ("fault", "accelerator", "shown", "cause"),
    [
        ("oom_kill", "cpu", ["FAILED (OOMKilled, exit 137)"], FailureCause.OOM),
        (
            "preempt_spot",
            "cpu",
            ["FAILED (node shutdown or spot preemption"],
            FailureCause.PREEMPTED,
        ),
        ("evict", "cpu", ["FAILED (evicted: The node was low on"], FailureCause.PREEMPTED),
        ("lose_node", "cpu", ["FAILED ("], FailureCause.PREEMPTED),  # pod GC races the Job
        ("fail_image_pull", "cpu", ["ImagePull", f'image "{GKE_IMAGE}"'], FailureCause.IMAGE),
        (None, NO_NODE_ACCELERATOR, ["FAILED (Unschedulable for "], FailureCause.UNSCHEDULABLE),
    ],
    ids=["oom-kill", "spot-preemption", "eviction", "node-loss", "image-pull", "unschedulable"],
)
def test_a_job_ended_by_the_cluster_raises_saying_why_and_is_kept(
    gke_scenario_env: NodeAgent,
    real_k8s: ControlPlane,
    k8s_namespace: str,
    gcs_bucket: str,
    jobs: Jobs,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    fault: str | None,
    accelerator: str,
    shown: list[str],
    cause: FailureCause,
) -> None:
    if fault is None:  # a short deadline only where it is the point
        monkeypatch.setenv("KINETIC_UNSCHEDULABLE_TIMEOUT", "1")
    else:
        getattr(gke_scenario_env, fault)(k8s_namespace, selector="app=kinetic")
    # No preemption budget: the first disruption is the job's end (test_preemption has the
    # runs again).
    remote = _remote(uf.hold_until, accelerator, preemption_retries=0)
    job = remote.run_async(str(tmp_path / "never-opened"))
    if fault is None:
        # Nothing has read the job's status yet. The scheduler must have said Unschedulable
        # before anything does: the same 1 s deadline also ends a pod that no scheduler has
        # answered ("not scheduled yet"), and on a busy machine the job controller and the
        # scheduler can each take over a second.
        pods = f"/api/v1/namespaces/{k8s_namespace}/pods?labelSelector=app%3Dkinetic"
        _wait_for(
            lambda: any(
                condition.get("reason") == "Unschedulable"
                for pod in real_k8s.request("GET", pods)["items"]
                for condition in pod.get("status", {}).get("conditions") or []
            ),
            "the scheduler to say the job's pod is Unschedulable",
        )
    with pytest.raises(JobFailedError) as caught:
        job.result(timeout=60)
    message = str(caught.value)
    assert job.job_id in message
    assert all(part in message for part in shown), message
    assert job.status() is JobStatus.FAILED
    failure = job.failure()
    assert failure is not None
    assert (failure.cause, failure.attempt) == (cause, 0)
    assert failure.reason in message, "the same reason, for people, as the error says"
    assert open_store(gcs_bucket).exists(layout.job_record_key(job.job_id))
    assert jobs.get(job.job_id) is not None, "a failed job is kept for its logs"


def test_a_process_exit_on_a_node_whose_kubelet_is_unreachable_is_a_job_failure(
    gke_scenario_env: NodeAgent,
) -> None:
    """Issue 19: the pod's log that decorates the failure cannot be read (the API server's log
    proxy answers 500), and that must not replace the job's failure with a BackendError. The
    output the job kept in the store stands in for the pod's log (issue 30)."""
    gke_scenario_env.set_unreachable("cpu-0")  # where CPU jobs run
    job = _remote(uf.exit_at_once).run_async(3)
    with pytest.raises(JobFailedError) as caught:
        job.result(timeout=60)
    assert not isinstance(caught.value, BackendError)
    message = str(caught.value)
    assert job.job_id in message
    assert f"[kinetic] job {job.job_id}: running exit_at_once" in message, message


def test_an_api_failure_on_submit_is_a_backend_error_and_leaves_nothing_behind(
    gke_api_proxy: ApiProxy, gcs_bucket: str, jobs: Jobs
) -> None:
    gke_api_proxy.inject(ApiFault(method="POST", path_contains="/jobs", code=500, times=None))
    with pytest.raises(BackendError) as caught:
        _remote(operator.add).run_async(1, 2)
    message = str(caught.value)
    assert "creating Job add-" in message
    assert "500" in message
    assert open_store(gcs_bucket).list("jobs/") == []
    assert jobs.names() == []
    assert kinetic.list_jobs(backend="gke") == []


# -- a batch -----------------------------------------------------------------------------------


def test_a_batch_retries_a_child_the_cluster_killed_as_its_next_attempt(
    gke_scenario_env: NodeAgent,
    k8s_namespace: str,
    gcs_bucket: str,
    jobs: Jobs,
    tmp_path: Path,
) -> None:
    """An OOM kill spends a retry (a preemption does not: ``test_preemption``); the batch's
    Indexed Job runs the index again as attempt 1, which records itself."""
    armed = gke_scenario_env.oom_kill(k8s_namespace, selector=f"{COMPLETION_INDEX}=1", times=1)
    gate = tmp_path / "gate"
    opener = _open_when(lambda: armed.hits, gate)
    batch = _remote(uf.square_after).run_async_map(
        [(1, str(gate)), (2, str(gate)), (3, str(gate))], retries=1
    )

    assert batch.results(timeout=120) == [1, 4, 9]
    opener.join()
    retried = batch.jobs[1]
    assert retried is not None and retried.attempt == 1
    first_attempt = retried.job_id.removesuffix("-r1")
    (hit,) = armed.hits
    assert hit.startswith(f"{k8s_namespace}/{first_attempt}-"), "the index's first pod"
    (job,) = jobs.names()
    assert (jobs.get(job) or {})["status"]["completedIndexes"] == "0-2"
    store = open_store(gcs_bucket)
    assert store.exists(layout.child_key(batch.group_id, 1, 1)), "the retry recorded itself"
    assert store.exists(layout.group_call_key(batch.group_id))
    assert [job.attempt for job in batch.jobs if job is not None] == [0, 1, 0]


def test_a_batch_without_retries_reports_the_killed_child(
    gke_scenario_env: NodeAgent, k8s_namespace: str, tmp_path: Path
) -> None:
    armed = gke_scenario_env.oom_kill(k8s_namespace, selector=f"{COMPLETION_INDEX}=1")
    gate = tmp_path / "gate"
    opener = _open_when(lambda: armed.hits, gate)
    batch = _remote(uf.square_after).run_async_map([(1, str(gate)), (2, str(gate))])
    with pytest.raises(BatchError) as caught:
        batch.results(timeout=120, cleanup=False)  # keep the failed child to read its reason
    opener.join()
    assert caught.value.partial_results == [1, None]
    failed = batch.failures()
    assert [job.group_index for job in failed] == [1]
    assert failed[0].status_detail().describe() == "FAILED (OOMKilled, exit 137)"


def test_each_poll_of_a_batch_is_one_job_list_by_the_groups_label(
    gke_api_proxy: ApiProxy, monkeypatch: pytest.MonkeyPatch
) -> None:
    polls: list[list[str]] = []
    original = GKEBackend.statuses

    def counted(self: GKEBackend, records: Any) -> Any:
        polls.append([record.job_id for record in records])
        return original(self, records)

    monkeypatch.setattr(GKEBackend, "statuses", counted)
    gke_api_proxy.clear()
    batch = _remote(operator.mul).run_async_map([(i, i) for i in range(5)])
    assert batch.results(timeout=120, cleanup=False) == [0, 1, 4, 9, 16]

    requests = list(gke_api_proxy.requests)
    job_lists = [r for r in requests if r.method == "GET" and r.path.endswith("/jobs")]
    job_reads = [r for r in requests if r.method == "GET" and "/jobs/" in r.path]
    pod_lists = [r for r in requests if r.method == "GET" and r.path.endswith("/pods")]
    assert polls, "the batch was observed"
    assert len(job_lists) == len(polls), "one Job LIST per poll, whatever the batch's size"
    assert job_reads == [], "no per-job reads while polling"
    assert len(pod_lists) <= len(polls)
    children = {job.job_id for job in batch.jobs if job is not None}
    allowed = {group_selector(batch.group_id)} | {job_selector(c) for c in children}
    selectors = [r.params["labelSelector"] for r in job_lists]
    assert set(selectors) <= allowed
    # An Indexed Job's children are read through their batch's Job, one child or all.
    assert selectors.count(group_selector(batch.group_id)) == len(polls), "by group"
    batch.cleanup()


# -- discovery, attach, standalone submission --------------------------------------------------


def test_list_jobs_finds_jobs_by_label_and_hydrates_them_from_the_bucket(
    gke_scenario_env: NodeAgent, k8s_namespace: str, gcs_bucket: str, tmp_path: Path
) -> None:
    gate = tmp_path / "gate"
    submitted = [_remote(uf.hold_until).run_async(str(gate), i) for i in range(2)]
    # A Kinetic Job whose record is not in the bucket is skipped, not an error.
    settings = BackendSettings(project=GKE_PROJECT, store_uri=gcs_bucket, namespace=k8s_namespace)
    stray = GKEBackend(settings, command=HOLD_POD)
    stray.submit(_record("stray-1", gcs_bucket, k8s_namespace))

    listed = sorted(kinetic.list_jobs(backend="gke"), key=lambda job: job.job_id)
    assert listed == sorted(submitted, key=lambda job: job.job_id)
    assert all(job.image_uri == GKE_IMAGE and job.func_name == "hold_until" for job in listed)
    attached = kinetic.attach(submitted[0].job_id, backend="gke")
    assert attached == submitted[0]

    gate.touch()
    assert [job.result(timeout=60) for job in submitted] == [0, 1]
    assert kinetic.list_jobs(backend="gke") == []


def test_submit_job_runs_a_record_prepared_without_the_kinetic_client(
    gke_scenario_env: NodeAgent, k8s_namespace: str, gcs_bucket: str
) -> None:
    """kinetic-gke on its own: store the call by hand with kinetic-protocol, then submit."""
    store = open_store(gcs_bucket)
    payload = cloudpickle.dumps((operator.mul, (6, 7), {}))
    key = layout.payload_key("mul-by-hand")
    call = CallDescriptor(
        job_id="mul-by-hand",
        func_name="mul",
        payload=ArtifactRef(key=key, sha256=hashlib.sha256(payload).hexdigest(), size=len(payload)),
    )
    record = _record("mul-by-hand", gcs_bucket, k8s_namespace, func_name="mul")
    store.write(key, payload)
    keyring = keyring_of(record)
    store.write(layout.call_key("mul-by-hand"), seal_json(keyring, "call", "mul-by-hand", call))
    store.write(layout.job_record_key("mul-by-hand"), seal_job_record(record))

    backend = kinetic_gke.submit_job(record)
    _wait_for(
        lambda: backend.statuses([record])["mul-by-hand"].status is JobStatus.SUCCEEDED,
        "the hand-made job to succeed",
    )
    key = layout.result_key("mul-by-hand")
    envelope = open_result(record, store.read(key), key=key)
    assert isinstance(envelope, Succeeded)
    assert cloudpickle.loads(envelope.value) == 42
    assert kinetic.attach("mul-by-hand", backend="gke").result() == 42


def test_a_whole_run_reads_the_kubeconfig_and_never_writes_it(
    gke_scenario_env: NodeAgent, tmp_path: Path
) -> None:
    kubeconfig = Path(os.environ["KUBECONFIG"])
    before = (kubeconfig.read_bytes(), kubeconfig.stat().st_mtime_ns)
    assert _remote(operator.add).run_async(2, 3).result(timeout=60) == 5
    held = _remote(uf.hold_until).run_async(str(tmp_path / "never"))
    assert [job.job_id for job in kinetic.list_jobs(backend="gke")] == [held.job_id]
    held.cancel(cleanup_timeout=30, cleanup_poll_interval=0.05)
    held.cancel(cleanup_timeout=30, cleanup_poll_interval=0.05)  # idempotent
    assert held.status() is JobStatus.NOT_FOUND
    assert (kubeconfig.read_bytes(), kubeconfig.stat().st_mtime_ns) == before
