"""On gke and pathways, captured variables travel in a per-job Secret owned by the Job or
LeaderWorkerSet: on the real control plane (its garbage collector included), the node agent and
fake-gcs-server."""

import base64
import json
import secrets
import time
from collections.abc import Iterator
from typing import Any

import pytest
import scenario_funcs as uf
from kubernetes import client
from scenario_support import ScenarioBackend, backend_params

from kinetic_gke.k8s import ClusterConnection, JobWorkload, Workload
from kinetic_gke.k8s.env_secrets import env_secret_name
from kinetic_pathways.workload import LeaderWorkerSetWorkload
from kinetic_protocol import BackendError, KineticError
from kinetic_runtime.stores import open_store
from kinetic_testing.controlplane.cluster import ControlPlane
from kinetic_testing.controlplane.proxy import ApiFault, ApiProxy
from kinetic_testing.nodeagent import NodeAgent

pytestmark = [pytest.mark.realk8s, pytest.mark.gcs]

DEADLINE_S = 60.0


WORKLOADS: dict[str, Workload] = {"gke": JobWorkload(), "pathways": LeaderWorkerSetWorkload()}


class Cluster:
    """The namespace's Secrets and job objects, read with the admin client."""

    def __init__(self, api: Any, namespace: str) -> None:
        self.core = client.CoreV1Api(api)
        self.batch = client.BatchV1Api(api)
        self.namespace = namespace
        self.connection = ClusterConnection(api, namespace)

    def secret(self, name: str) -> dict[str, Any] | None:
        return self.connection.read_or_none(
            f"reading Secret {name}", self.core.read_namespaced_secret, name, self.namespace
        )

    def owner(self, backend: str, name: str) -> dict[str, Any] | None:
        """The job's Job (gke) or LeaderWorkerSet (pathways)."""
        return WORKLOADS[backend].get(self.connection, name)

    def delete_owner(self, backend: str, name: str) -> None:
        """Delete the job's object with the API alone, as ``kubectl delete`` or a TTL would."""
        WORKLOADS[backend].delete(self.connection, name)

    def secret_names(self) -> list[str]:
        raw = self.core.list_namespaced_secret(self.namespace, _preload_content=False)
        return [item["metadata"]["name"] for item in json.loads(raw.data)["items"]]

    def wait_secret_gone(self, name: str) -> None:
        deadline = time.monotonic() + DEADLINE_S
        while self.secret(name) is not None:
            assert time.monotonic() < deadline, f"Secret {name} still there after {DEADLINE_S}s"
            time.sleep(0.1)


@pytest.fixture
def cluster(real_k8s: ControlPlane, k8s_namespace: str) -> Iterator[Cluster]:
    api = real_k8s.api_client()
    yield Cluster(api, k8s_namespace)
    api.close()


@pytest.fixture
def secret_value(monkeypatch: pytest.MonkeyPatch) -> str:
    value = f"s3cr3t-{secrets.token_hex(16)}"
    monkeypatch.setenv("SCN_SECRET", value)
    return value


@pytest.fixture(params=backend_params("gke", "pathways"))
def k8s_backend(request: pytest.FixtureRequest) -> ScenarioBackend:
    request.getfixturevalue(f"{request.param}_scenario_env")
    return ScenarioBackend(request.param)


def _run_captured(backend: ScenarioBackend) -> Any:
    remote = backend.decorate(capture_env_vars=["SCN_SECRET"])(uf.env_digests)
    job = remote.run_async("SCN_")
    job.wait(timeout=120)
    return job


def test_the_value_is_in_a_secret_owned_by_the_job_and_gone_after_cleanup(
    k8s_backend: ScenarioBackend, cluster: Cluster, gcs_bucket: str, secret_value: str
) -> None:
    job = _run_captured(k8s_backend)
    name = env_secret_name(job.record.k8s_name)
    secret = cluster.secret(name)
    assert secret is not None, f"no Secret {name}"
    assert base64.b64decode(secret["data"]["SCN_SECRET"]).decode() == secret_value
    owner = cluster.owner(k8s_backend.name, job.record.k8s_name)
    assert owner is not None
    [reference] = secret["metadata"]["ownerReferences"]
    assert (reference["kind"], reference["name"], reference["uid"]) == (
        owner["kind"],
        job.record.k8s_name,
        owner["metadata"]["uid"],
    )
    assert secret["metadata"]["labels"]["kinetic.dev/job-id"] == job.job_id
    store = open_store(gcs_bucket)
    assert not [k for k in store.list("") if secret_value.encode() in store.read(k)]
    job.cleanup()
    assert cluster.secret(name) is None  # deleted with the job, not left to the collector


def test_the_garbage_collector_removes_the_secret_with_its_job(
    k8s_backend: ScenarioBackend, cluster: Cluster, secret_value: str
) -> None:
    """A job object removed by Kubernetes itself (a TTL, `kubectl delete`) takes its Secret
    with it: the ownerReference is real, not only a label."""
    job = _run_captured(k8s_backend)
    name = env_secret_name(job.record.k8s_name)
    assert cluster.secret(name) is not None
    cluster.delete_owner(k8s_backend.name, job.record.k8s_name)
    cluster.wait_secret_gone(name)


def test_a_job_without_captured_variables_gets_no_secret(
    gke_scenario_env: NodeAgent, cluster: Cluster
) -> None:
    job = _run_captured_without_any(ScenarioBackend("gke"))
    assert cluster.secret(env_secret_name(job.record.k8s_name)) is None
    assert job.result() == {}


def _run_captured_without_any(backend: ScenarioBackend) -> Any:
    job = backend.decorate()(uf.env_digests).run_async("SCN_")
    job.wait(timeout=120)
    return job


def test_a_refused_submission_leaves_no_secret(
    gke_api_proxy: ApiProxy, cluster: Cluster, secret_value: str
) -> None:
    gke_api_proxy.inject(ApiFault(method="POST", path_contains="/jobs", code=500, times=None))
    with pytest.raises(BackendError):
        ScenarioBackend("gke").decorate(capture_env_vars=["SCN_SECRET"])(uf.env_digests).run_async(
            "SCN_"
        )
    assert not [n for n in cluster.secret_names() if n.endswith("-env")]


def test_a_secret_that_cannot_be_given_its_owner_takes_the_job_away_with_it(
    gke_api_proxy: ApiProxy, cluster: Cluster, secret_value: str
) -> None:
    """Without its ownerReference the Secret would outlive the job: the submission is refused
    and neither the Job nor the Secret stays."""
    gke_api_proxy.inject(ApiFault(method="PATCH", path_contains="/secrets/", code=403, times=None))
    with pytest.raises(KineticError, match="owner of Secret"):
        ScenarioBackend("gke").decorate(capture_env_vars=["SCN_SECRET"])(uf.env_digests).run_async(
            "SCN_"
        )
    assert not [n for n in cluster.secret_names() if n.endswith("-env")]
    raw = cluster.batch.list_namespaced_job(cluster.namespace, _preload_content=False)
    assert [
        job for job in json.loads(raw.data)["items"] if not job["metadata"].get("deletionTimestamp")
    ] == []
