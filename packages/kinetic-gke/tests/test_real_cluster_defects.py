"""Issue 19: what the Kubernetes API simulator agreed with us about, and a real cluster does not.

Each test here runs on the real control plane (the real job controller, admission plugins and
QoS computation) with the node agent as kubelet and scheduler, and failed before its fix.
"""

import json
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from gke_test_support import (
    HOLD,
    BackendFactory,
    Cluster,
    RecordFactory,
    state_of,
    wait_for,
    wait_state,
)
from kubernetes import client, watch

from kinetic_gke.labels import job_selector
from kinetic_gke.manifests import PodOptions
from kinetic_gke.status import job_state, needs_pods
from kinetic_protocol import JobStatus
from kinetic_testing.controlplane.cluster import ControlPlane
from kinetic_testing.nodeagent import NodeAgent

pytestmark = pytest.mark.realk8s

BRIEF = (sys.executable, "-c", "import time\nprint('done', flush=True)\ntime.sleep(0.5)")
"""Runs long enough to be seen RUNNING, then succeeds."""
Obj = dict[str, Any]
Versions = list[tuple[int, Obj]]


@contextmanager
def _recording(
    real_k8s: ControlPlane, list_fn: Callable[[client.ApiClient], Any], namespace: str, **kw: Any
) -> Iterator[Versions]:
    """Record every version the API server stores of the listed objects, from now on, as
    (resourceVersion, object) pairs: a watch sees each write, none coalesced."""
    api = real_k8s.api_client()
    lister = list_fn(api)
    start = json.loads(lister(namespace, _preload_content=False, **kw).data)
    versions: Versions = []
    errors: list[Exception] = []
    watcher = watch.Watch()
    stopping = threading.Event()

    def run() -> None:
        try:
            for event in watcher.stream(
                lister,
                namespace,
                resource_version=start["metadata"]["resourceVersion"],
                timeout_seconds=120,
                **kw,
            ):
                raw = event["raw_object"]
                versions.append((int(raw["metadata"]["resourceVersion"]), raw))
        except Exception as exc:  # closing the client ends the stream: only then expected
            if not stopping.is_set():
                errors.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        yield versions
    finally:
        stopping.set()
        watcher.stop()
        api.close()
        thread.join(timeout=5)
    assert errors == [], f"the watch broke: {errors}"


def _pod_at(pods: Versions, revision: int) -> Obj | None:
    """The pod as stored just before ``revision``."""
    earlier = [pod for rv, pod in pods if rv < revision]
    return earlier[-1] if earlier else None


def _intermediate(job: Obj) -> bool:
    """The job controller's first write of success: not counted as ``succeeded`` yet."""
    status = job.get("status") or {}
    criteria = any(
        c["type"] == "SuccessCriteriaMet" and c["status"] == "True"
        for c in status.get("conditions") or []
    )
    uncounted = (status.get("uncountedTerminatedPods") or {}).get("succeeded")
    return (criteria or bool(uncounted)) and not status.get("succeeded")


def test_a_finished_job_never_reads_pending_between_the_controllers_two_writes(
    real_k8s: ControlPlane,
    make_backend: BackendFactory,
    record: RecordFactory,
    cluster: Cluster,
) -> None:
    backend = make_backend(command=BRIEF)
    job = record("two-writes")
    ns = cluster.namespace
    jobs_of = lambda api: client.BatchV1Api(api).list_namespaced_job  # noqa: E731
    pods_of = lambda api: client.CoreV1Api(api).list_namespaced_pod  # noqa: E731
    with (
        _recording(real_k8s, jobs_of, ns, field_selector="metadata.name=two-writes") as jobs,
        _recording(real_k8s, pods_of, ns, label_selector=job_selector("two-writes")) as pods,
    ):
        backend.submit(job)
        seen = []
        while not (state := state_of(backend, job)).status.is_terminal:
            seen.append(state.status)
        seen.append(state.status)
        wait_for(
            lambda: any((j.get("status") or {}).get("completionTime") for _, j in jobs),
            message="the Job's final write to be watched",
        )

    succeeded_at = min(
        rv for rv, pod in pods if (pod.get("status") or {}).get("phase") == "Succeeded"
    )
    after = [(rv, j) for rv, j in jobs if rv > succeeded_at]
    assert any(_intermediate(j) for _, j in after), "the controller's first write was watched"
    for rv, version in after:
        pod = _pod_at(pods, rv)
        # As the backend reads it: the pods only when the Job alone cannot say.
        given = [pod] if pod is not None and needs_pods(version) else []
        read = job_state(version, given, unschedulable_timeout=600)
        if (version.get("status") or {}).get("active"):
            # Written from the controller's cache before it saw the pod end (under load it
            # lags the pod's own write): the Job still says running, and so may the read.
            assert read.status in (JobStatus.RUNNING, JobStatus.SUCCEEDED), (version, read)
        else:
            assert read.status is JobStatus.SUCCEEDED, (version.get("status"), read)

    assert state.status is JobStatus.SUCCEEDED
    ran = seen.index(JobStatus.RUNNING) if JobStatus.RUNNING in seen else len(seen)
    assert JobStatus.PENDING not in seen[ran:], f"RUNNING -> PENDING while polling: {seen}"


# -- FailedCreate: the cluster refuses to create the pod -------------------------------------


def _no_service_account(cluster: Cluster) -> dict[str, Any]:
    return {"pod_options": PodOptions(service_account="does-not-exist")}


def _no_room_in_quota(cluster: Cluster) -> dict[str, Any]:
    cluster.create(
        {
            "apiVersion": "v1",
            "kind": "ResourceQuota",
            "metadata": {"name": "no-pods"},
            "spec": {"hard": {"pods": "0"}},
        }
    )
    return {}


def _restricted_namespace_and_root(cluster: Cluster) -> dict[str, Any]:
    cluster.label_namespace({"pod-security.kubernetes.io/enforce": "restricted"})
    return {"pod_options": PodOptions(run_as_root=True)}


@pytest.mark.parametrize(
    ("refusal", "cause"),
    [
        (_no_service_account, 'serviceaccount "does-not-exist" not found'),
        (_no_room_in_quota, "quota"),
        (_restricted_namespace_and_root, 'violates PodSecurity "restricted'),
    ],
    ids=["missing-service-account", "resource-quota", "pod-security"],
)
def test_a_pod_the_cluster_refuses_to_create_is_pending_with_the_reason_then_fails(
    make_backend: BackendFactory,
    record: RecordFactory,
    cluster: Cluster,
    refusal: Callable[[Cluster], dict[str, Any]],
    cause: str,
) -> None:
    options = refusal(cluster)
    backend = make_backend(command=HOLD, unschedulable_timeout=5.0, **options)
    job = record("refused")
    backend.submit(job)
    pending = wait_for(
        lambda: (s := state_of(backend, job)).detail.startswith("FailedCreate: ") and s,
        message="the FailedCreate event to show",
    )
    assert pending.status is JobStatus.PENDING
    assert cause in pending.detail, pending.detail
    failed = wait_state(backend, job, JobStatus.FAILED)
    assert failed.detail.startswith("FailedCreate: "), failed.detail
    assert cause in failed.detail
    assert cluster.pods(job_selector(job.job_id)) == []


def test_pods_run_where_the_restricted_pod_security_standard_is_enforced(
    make_backend: BackendFactory, record: RecordFactory, cluster: Cluster
) -> None:
    cluster.label_namespace({"pod-security.kubernetes.io/enforce": "restricted"})
    backend = make_backend(command=BRIEF)
    job = record("restricted")
    backend.submit(job)
    assert wait_state(backend, job, JobStatus.SUCCEEDED, JobStatus.FAILED).status is (
        JobStatus.SUCCEEDED
    )
    assert backend.logs(job) == "done\n"


def test_a_gpu_pod_is_burstable_with_cpu_and_memory_requests(
    make_backend: BackendFactory, record: RecordFactory, cluster: Cluster
) -> None:
    backend = make_backend(command=HOLD)
    job = record("l4", accelerator="gpu-l4")
    backend.submit(job)
    pod = wait_for(
        lambda: (pods := cluster.pods(job_selector("l4"))) and pods[0],
        message="the pod to be created",
    )
    assert pod["status"]["qosClass"] == "Burstable"
    requests = pod["spec"]["containers"][0]["resources"]["requests"]
    assert {"cpu", "memory"} <= set(requests), requests
    assert wait_state(backend, job, JobStatus.RUNNING).status is JobStatus.RUNNING
    assert pod["spec"]["containers"][0]["resources"]["limits"] == {"nvidia.com/gpu": "1"}


@pytest.mark.parametrize("fault", ["preempt_spot", "evict"], ids=["exit-143", "eviction"])
def test_the_first_terminal_reason_is_kept_after_the_pod_is_deleted(
    make_backend: BackendFactory,
    record: RecordFactory,
    cluster: Cluster,
    agent: NodeAgent,
    fault: str,
) -> None:
    backend = make_backend(command=HOLD)
    job = record("kept", preemption_retries=0)  # no budget: the disruption ends the job
    backend.submit(job)
    wait_state(backend, job, JobStatus.RUNNING)
    getattr(agent, fault)(cluster.namespace, selector=job_selector("kept"))
    first = wait_state(backend, job, JobStatus.FAILED)
    assert first.detail.startswith(("node shutdown or spot preemption", "evicted: ")), first
    (pod,) = cluster.pods(job_selector("kept"))
    cluster.core.delete_namespaced_pod(
        pod["metadata"]["name"], cluster.namespace, grace_period_seconds=0
    )
    wait_for(lambda: not cluster.pods(job_selector("kept")), message="the pod to be deleted")
    assert state_of(backend, job) == first


def test_the_service_account_setting_is_the_one_the_backend_was_built_with(
    make_backend: BackendFactory,
    record: RecordFactory,
    cluster: Cluster,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Settings are resolved once, when the backend is built (the client builds a fresh one
    when a setting changes): a change afterwards reaches no job of this backend."""
    for name in ("sa-one", "sa-two"):
        monkeypatch.setenv("KINETIC_SERVICE_ACCOUNT", name)
        backend = make_backend(command=HOLD)
        monkeypatch.setenv("KINETIC_SERVICE_ACCOUNT", "changed-after-the-build")
        backend.submit(record(f"with-{name}"))
    accounts = {
        job["metadata"]["name"]: job["spec"]["template"]["spec"].get("serviceAccountName")
        for job in cluster.jobs()
    }
    assert accounts == {"with-sa-one": "sa-one", "with-sa-two": "sa-two"}
