"""`kinetic doctor`: all PASS on a cluster `kinetic up` made; each check, broken, FAILs and
shows its fix, and the command exits 1.

`doctor` only reads, so one cluster made by `up` serves the module: each test starts from the
Google Cloud fake's state as `up` left it (the kubeconfig, the namespace and the settings are
never changed but through the test's own ``monkeypatch``)."""

import copy
import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from provision_support import (
    PROJECT,
    ZONE,
    Invoke,
    add_unmanaged_gpu_pool,
    point_kinetic_at,
    write_kubeconfig,
)

from kinetic_gke.k8s import kube_context_name
from kinetic_testing.controlplane.cluster import ControlPlane
from kinetic_testing.controlplane.proxy import ApiProxy
from kinetic_testing.fake_gcs import FakeGcsServer
from kinetic_testing.gcp_fake import FakeGoogleCloud

pytestmark = [pytest.mark.realk8s, pytest.mark.gcs]

_CLUSTER = "kc-doctor"
_STATE = [
    ("container", "clusters"), ("apis", "enabled"), ("apis", "repositories"),
    ("apis", "project_policies"), ("apis", "sa_policies"), ("apis", "service_accounts"),
]  # fmt: skip
"""The fake's state the breakers change (besides settings and injected faults)."""


def _findings(result: Any) -> dict[str, dict[str, str]]:
    return {f["check"]: f for f in json.loads(result.stdout)}


@pytest.fixture(scope="module")
def made(
    fake_gcs: FakeGcsServer,
    real_k8s: ControlPlane,
    cluster_token: str,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[FakeGoogleCloud, dict[tuple[str, str], Any]]]:
    """A cluster `kinetic up` made, with the kubeconfig context its jobs (and doctor) use, for
    the module; and the fake's state right after `up`."""
    from kinetic_testing.command_host import stand_in_command_line

    tmp = tmp_path_factory.mktemp("doctor")
    with (
        FakeGoogleCloud(polls_until_done=2) as cloud,
        ApiProxy(real_k8s, tls=True) as proxy,
        pytest.MonkeyPatch.context() as settings,
    ):
        settings.setenv("KINETIC_GCP_API_ENDPOINT", cloud.url)
        namespace = real_k8s.create_namespace("doctor")
        point_kinetic_at(
            settings, cloud, real_k8s, proxy.address, cluster_token, tmp,
            cluster=_CLUSTER, namespace=namespace,
        )  # fmt: skip
        done = CliRunner().invoke(stand_in_command_line, ["up"], prog_name="kinetic")
        assert done.exit_code == 0, done.output
        settings.setenv("KUBECONFIG", str(write_kubeconfig(real_k8s, _CLUSTER, tmp / "kube")))
        with cloud.lock:
            after_up = {(api, name): copy.deepcopy(getattr(getattr(cloud, api), name))
                        for api, name in _STATE}  # fmt: skip
        yield cloud, after_up
        real_k8s.delete_namespace(namespace)


@pytest.fixture
def healthy(made: tuple[FakeGoogleCloud, dict[tuple[str, str], Any]]) -> FakeGoogleCloud:
    """The module's cluster as `up` left it, whatever an earlier test broke."""
    cloud, after_up = made
    with cloud.lock:
        cloud.faults.clear()
        for (api, name), state in after_up.items():
            setattr(getattr(cloud, api), name, copy.deepcopy(state))
    return cloud


@pytest.fixture
def cluster_name() -> str:
    """The module's cluster (conftest's names one per test)."""
    return _CLUSTER


def test_doctor_passes_every_check_on_a_cluster_up_made(
    healthy: FakeGoogleCloud, kinetic: Invoke
) -> None:
    result = kinetic("doctor", "--accelerator", "cpu", "--json")
    found = _findings(result)
    assert {name: f["outcome"] for name, f in found.items() if f["outcome"] != "PASS"} == {}
    assert result.exit_code == 0


def _drop_api(cloud: FakeGoogleCloud, **_: Any) -> None:
    cloud.apis.enabled[PROJECT].discard("artifactregistry.googleapis.com")


def _no_credentials(cloud: FakeGoogleCloud, monkeypatch: pytest.MonkeyPatch, **_: Any) -> None:
    monkeypatch.delenv("KINETIC_GCP_API_ENDPOINT")
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", "/nonexistent/adc.json")


def _project_denied(cloud: FakeGoogleCloud, **_: Any) -> None:
    for _ in range(2):  # the JSON run and the human one
        cloud.fail("resourcemanager.get", code=403, message="lacks resourcemanager.projects.get")


def _cluster_gone(cloud: FakeGoogleCloud, cluster: str, **_: Any) -> None:
    cloud.container.clusters.pop(f"projects/{PROJECT}/locations/{ZONE}/clusters/{cluster}")


def _no_context(cloud: FakeGoogleCloud, monkeypatch: pytest.MonkeyPatch, **_: Any) -> None:
    monkeypatch.setenv("KINETIC_KUBE_CONTEXT", "gke_elsewhere")


def _registry_gone(cloud: FakeGoogleCloud, **_: Any) -> None:
    cloud.apis.repositories.clear()


def _bucket_role_revoked(cloud: FakeGoogleCloud, **_: Any) -> None:
    policy = cloud.apis.project_policies[PROJECT]
    policy["bindings"] = [b for b in policy["bindings"] if b["role"] != "roles/storage.objectUser"]


def _wi_binding_gone(cloud: FakeGoogleCloud, **_: Any) -> None:
    for policy in cloud.apis.sa_policies.values():
        policy["bindings"] = []


def _fuse_off(cloud: FakeGoogleCloud, cluster: str, **_: Any) -> None:
    found = cloud.container.clusters[f"projects/{PROJECT}/locations/{ZONE}/clusters/{cluster}"]
    found["addonsConfig"]["gcsFuseCsiDriverConfig"]["enabled"] = False


def _unmanaged_gpu_pool(cloud: FakeGoogleCloud, cluster: str, **_: Any) -> None:
    add_unmanaged_gpu_pool(cloud, cluster)


BREAKERS: list[tuple[str, Callable[..., None], list[str], str]] = [
    ("credentials", _no_credentials, [], "gcloud auth application-default login"),
    ("project", _project_denied, [], "gcloud projects describe kp-test"),
    ("apis", _drop_api, [], "gcloud services enable artifactregistry.googleapis.com"),
    ("cluster", _cluster_gone, [], "kinetic up --project kp-test"),
    ("kube-context", _no_context, [], "gcloud container clusters get-credentials"),
    ("node-pool", lambda cloud, **_: None, ["--accelerator", "gpu-h100"],
     "kinetic pool add --accelerator gpu-h100"),
    ("bucket", _bucket_role_revoked, [], "gcloud storage buckets add-iam-policy-binding"),
    ("registry", _registry_gone, [], "gcloud artifacts repositories create kinetic"),
    ("workload-identity", _wi_binding_gone, [], "roles/iam.workloadIdentityUser"),
    ("fuse", _fuse_off, ["--fuse"], "--update-addons GcsFuseCsiDriver=ENABLED"),
    ("gpu-driver", _unmanaged_gpu_pool, [], "kubectl apply --server-side -f"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("check", "breaker", "args", "fix"), BREAKERS, ids=[b[0] for b in BREAKERS]
)
def test_each_check_fails_with_its_fix_when_broken(
    healthy: FakeGoogleCloud,
    kinetic: Invoke,
    cluster_name: str,
    monkeypatch: pytest.MonkeyPatch,
    check: str,
    breaker: Callable[..., None],
    args: list[str],
    fix: str,
) -> None:
    breaker(healthy, cluster=cluster_name, monkeypatch=monkeypatch)
    result = kinetic("doctor", *args, "--json")
    finding = _findings(result)[check]
    assert finding["outcome"] == "FAIL", finding
    assert fix in finding["fix"] + finding["message"]
    assert result.exit_code == 1
    human = kinetic("doctor", *args)
    assert f"FAIL  {check}" in human.stdout


def test_lws_fails_with_its_fix_for_a_multi_host_accelerator_where_the_api_is_absent(
    healthy: FakeGoogleCloud,
    kinetic: Invoke,
    real_k8s: ControlPlane,
    cluster_name: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The cluster seen through a proxy whose discovery lacks leaderworkerset.x-k8s.io."""
    namespace = os.environ["KINETIC_NAMESPACE"]
    with ApiProxy(real_k8s) as proxy:
        proxy.hide_api_group("leaderworkerset.x-k8s.io")
        context = kube_context_name(PROJECT, ZONE, cluster_name)
        config = proxy.kubeconfig(tmp_path / "proxied", context=context, namespace=namespace)
        monkeypatch.setenv("KUBECONFIG", str(config))
        multi_host = kinetic("doctor", "--accelerator", "tpu-v5litepod-2x4", "--json")
        single = kinetic("doctor", "--json")
    finding = _findings(multi_host)["lws"]
    assert finding["outcome"] == "FAIL", finding
    assert "not installed" in finding["message"]
    assert f"kinetic up --project {PROJECT}" in finding["fix"]
    assert "kubectl apply --server-side -f" in finding["fix"]
    assert multi_host.exit_code == 1
    assert _findings(single)["lws"]["outcome"] == "WARN"


def test_jobset_passes_where_served_and_warns_with_its_fix_where_the_api_is_absent(
    healthy: FakeGoogleCloud,
    kinetic: Invoke,
    real_k8s: ControlPlane,
    cluster_name: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The session's cluster serves JobSet; seen through a proxy whose discovery lacks it."""
    assert _findings(kinetic("doctor", "--json"))["jobset"]["message"] == (
        "JobSet API served (v1alpha2)"
    )
    namespace = os.environ["KINETIC_NAMESPACE"]
    with ApiProxy(real_k8s) as proxy:
        proxy.hide_api_group("jobset.x-k8s.io")
        context = kube_context_name(PROJECT, ZONE, cluster_name)
        config = proxy.kubeconfig(tmp_path / "proxied", context=context, namespace=namespace)
        monkeypatch.setenv("KUBECONFIG", str(config))
        hidden = kinetic("doctor", "--json")
    finding = _findings(hidden)["jobset"]
    assert finding["outcome"] == "WARN", finding
    assert "JobSet is not installed" in finding["message"]
    assert f"kinetic up --project {PROJECT}" in finding["fix"]
    assert "jobset-v0.11.1.yaml" in finding["fix"]


def test_kueue_says_which_mode_the_cluster_is_in_and_fails_without_the_default_queue(
    healthy: FakeGoogleCloud,
    kinetic: Invoke,
    real_k8s: ControlPlane,
    cluster_name: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    namespace = os.environ["KINETIC_NAMESPACE"]
    found = _findings(kinetic("doctor", "--json"))
    assert found["kueue"]["outcome"] == "PASS", found["kueue"]
    assert "serving (API v1beta2)" in found["kueue"]["message"]
    assert found["queues"]["outcome"] == "PASS"
    assert found["queues"]["message"].startswith(
        "kinetic (cluster queue kinetic): 0 admitted, 0 pending; cpu 0 of 512"  # 256 + 256 spot
    )

    queues = f"/apis/kueue.x-k8s.io/v1beta2/namespaces/{namespace}/localqueues"
    made = real_k8s.request("GET", f"{queues}/kinetic")
    real_k8s.request("DELETE", f"{queues}/kinetic")
    try:
        missing = kinetic("doctor", "--json")
    finally:
        metadata = {k: made["metadata"][k] for k in ("name", "namespace", "labels")}
        real_k8s.request("POST", queues, {**made, "metadata": metadata, "status": {}})
    finding = _findings(missing)["kueue"]
    assert finding["outcome"] == "FAIL", finding
    assert f"namespace {namespace} has no LocalQueue kinetic" in finding["message"]
    assert f"kinetic up --project {PROJECT}" in finding["fix"]
    assert missing.exit_code == 1

    with ApiProxy(real_k8s) as proxy:
        proxy.hide_api_group("kueue.x-k8s.io")
        context = kube_context_name(PROJECT, ZONE, cluster_name)
        config = proxy.kubeconfig(tmp_path / "proxied", context=context, namespace=namespace)
        monkeypatch.setenv("KUBECONFIG", str(config))
        unqueued = _findings(kinetic("doctor", "--json"))
    assert unqueued["kueue"]["outcome"] == "WARN"
    assert unqueued["kueue"]["message"].startswith("no Kueue: jobs run unqueued")
    assert "installs Kueue v0.17.0" in unqueued["kueue"]["fix"]
    assert unqueued["queues"] == {
        "check": "queues",
        "outcome": "PASS",
        "message": "no Kueue: no queues",
        "fix": "",
    }
