"""Installing LeaderWorkerSet, JobSet and Kueue, against real API servers: every object of the
shipped LWS and JobSet manifests is accepted; an install found (whoever made it) is kept; where
there is none, `kinetic up` installs it, converges after a failure half-way, and then finds it.
The GPU driver installer (none ships) installs from an override.

The bare plane has no kubelet for Kueue's controller, so its Kueue cannot run there: while
registered, its webhooks would refuse every Job and Pod. The tests of other installs use a
stand-in Kueue named by the override settings (its CRDs alone: served, no webhooks); the test
of Kueue's own install has a bare plane of its own."""

import base64
import contextlib
import copy
import functools
import hashlib
import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml  # type: ignore[import-untyped]
from provision_support import (
    PROJECT,
    QUICK_POLLS,
    ZONE,
    Invoke,
    add_unmanaged_gpu_pool,
    ok,
    point_gke_at,
)

from kinetic_gke.k8s import ClusterConnection
from kinetic_gke.provision import kueue_queues
from kinetic_gke.provision.incluster import (
    JOBSET_GROUP,
    LWS_GROUP,
    plan_in_cluster,
    read_in_cluster,
)
from kinetic_gke.provision.manifests import JOBSET, KUEUE, LWS, PinnedManifest, apply_manifest
from kinetic_gke.provision.spec import ClusterSpec
from kinetic_testing.controlplane.build import Built
from kinetic_testing.controlplane.cluster import ApiError, ControlPlane
from kinetic_testing.controlplane.jobset_build import JOBSET_CRD
from kinetic_testing.controlplane.proxy import ApiFault, ApiProxy
from kinetic_testing.fake_gcs import FakeGcsServer
from kinetic_testing.gcp_fake import FakeGoogleCloud

pytestmark = [pytest.mark.realk8s, pytest.mark.gcs]

_DEPLOYMENT = "/apis/apps/v1/namespaces/lws-system/deployments/lws-controller-manager"
_JOBSET_DEPLOYMENT = "/apis/apps/v1/namespaces/jobset-system/deployments/jobset-controller-manager"


def _documents(pin: PinnedManifest = LWS) -> list[dict[str, Any]]:
    return [d for d in yaml.load_all(pin.load(), Loader=yaml.CSafeLoader) if d]


def _spec(namespace: str = "default") -> ClusterSpec:
    return ClusterSpec(project=PROJECT, zone=ZONE, cluster="kinetic-cluster", namespace=namespace)


def _served_crd(plane: ControlPlane, pin: PinnedManifest) -> Path:
    """The CRD the test control plane serves for ``pin``: built from the same module."""
    return plane.binaries.lws_crd if pin is LWS else plane.binaries.jobset / JOBSET_CRD


@pytest.mark.parametrize(
    ("pin", "namespace", "deployment"),
    [(LWS, "lws-system", _DEPLOYMENT), (JOBSET, "jobset-system", _JOBSET_DEPLOYMENT)],
    ids=["lws", "jobset"],
)
def test_every_object_of_the_shipped_manifest_is_accepted_by_the_api_server(
    real_k8s: ControlPlane, pin: PinnedManifest, namespace: str, deployment: str
) -> None:
    """Server-side apply, dryRun=All: validated and admitted by the real API server, stored
    nowhere (this cluster's own install is left as it is)."""
    # A dry run cannot put objects in a namespace that a dry run did not make.
    real_k8s.request("POST", "/api/v1/namespaces", {"metadata": {"name": namespace}})
    connection = ClusterConnection(real_k8s.api_client(), "default")
    try:
        applied = apply_manifest(connection, pin.load(), dry_run=True)
    finally:
        real_k8s.delete_namespace(namespace)
    assert applied == [f"{d['kind']}/{d['metadata']['name']}" for d in _documents(pin)]
    with pytest.raises(ApiError) as missing:
        real_k8s.request("GET", deployment)
    assert missing.value.code == 404
    crd = next(d for d in _documents(pin) if d["kind"] == "CustomResourceDefinition")
    served = yaml.load(_served_crd(real_k8s, pin).read_bytes(), Loader=yaml.CSafeLoader)
    assert crd["spec"]["versions"] == served["spec"]["versions"]


@pytest.mark.parametrize(
    ("pin", "group", "version"),
    [(LWS, LWS_GROUP, "v1"), (JOBSET, JOBSET_GROUP, "v1alpha2")],
    ids=["lws", "jobset"],
)
def test_an_install_the_cluster_serves_is_kept_and_one_it_does_not_is_planned(
    real_k8s: ControlPlane,
    k8s_namespace: str,
    tmp_path: Path,
    pin: PinnedManifest,
    group: str,
    version: str,
) -> None:
    spec = _spec(k8s_namespace)
    served = {LWS_GROUP: "lws", JOBSET_GROUP: "jobset"}[group]
    with ApiProxy(real_k8s) as proxy:
        config = proxy.kubeconfig(tmp_path / "kubeconfig", context="proxied")
        connection = ClusterConnection.from_kubeconfig(
            context="proxied", namespace=k8s_namespace, config_file=config
        )
        found = read_in_cluster(spec, connection)
        assert getattr(found, served) == version
        kept = plan_in_cluster(spec, lambda: connection, (), found)
        assert not [s for s in kept.steps if s.action == "install"]
        assert f"{pin.name} API served ({version}); kept" in kept.notes
        proxy.hide_api_group(group)
        hidden = read_in_cluster(spec, connection)
        assert getattr(hidden, served) is None
        planned = plan_in_cluster(spec, lambda: connection, (), hidden)
        assert [s.target for s in planned.steps if s.action == "install"] == [
            f"{pin.name} {pin.version}"
        ]


# -- a cluster without LeaderWorkerSet ------------------------------------------------------


@pytest.fixture(scope="module")
def bare_k8s(
    k8s_binaries: Built, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ControlPlane]:
    """A control plane with no LeaderWorkerSet, JobSet or Kueue, as a new GKE cluster is
    (module-wide: it costs about 5 s and 0.5 GB)."""
    directory = tmp_path_factory.mktemp("bare-k8s")
    with ControlPlane(k8s_binaries, directory, lws=False, kueue=False, jobset=False) as plane:
        yield plane


@pytest.fixture
def bare_env(
    cloud: FakeGoogleCloud,
    fake_gcs: FakeGcsServer,
    bare_k8s: ControlPlane,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[tuple[FakeGoogleCloud, ApiProxy, str]]:
    """`kinetic up` settings whose cluster endpoint is the bare control plane (behind a TLS
    proxy); yields the fake, the proxy and the cluster name."""
    with _settings_for(bare_k8s, cloud, tmp_path, monkeypatch) as env:
        yield env


@pytest.fixture
def own_bare_env(
    cloud: FakeGoogleCloud,
    fake_gcs: FakeGcsServer,
    k8s_binaries: Built,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[tuple[ControlPlane, ApiProxy]]:
    """Like ``bare_env``, on a bare plane of this test's own (about 5 s): for installing the
    real Kueue, whose webhooks would refuse the shared plane's Jobs and Pods, and whose CRDs
    could not always be deleted again (their cleanup waited on storage "(re)initializing")."""
    with (
        ControlPlane(
            k8s_binaries, tmp_path / "own-plane", lws=False, kueue=False, jobset=False
        ) as plane,
        _settings_for(plane, cloud, tmp_path, monkeypatch) as (_cloud, proxy, _cluster),
    ):
        yield plane, proxy


@contextlib.contextmanager
def _settings_for(
    plane: ControlPlane, cloud: FakeGoogleCloud, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[FakeGoogleCloud, ApiProxy, str]]:
    import os

    for name in list(os.environ):
        if name.startswith("KINETIC_") and name != "KINETIC_GCP_API_ENDPOINT":
            monkeypatch.delenv(name)
    cluster = f"bare-{uuid.uuid4().hex[:6]}"
    stand_in = tmp_path / "kueue-crds.yaml"
    stand_in.write_text("\n---\n".join(json.dumps(crd) for crd in _kueue_crds()))
    monkeypatch.setenv(KUEUE.source_setting.env, str(stand_in))
    monkeypatch.setenv(
        KUEUE.checksum_setting.env, hashlib.sha256(stand_in.read_bytes()).hexdigest()
    )
    with ApiProxy(plane, tls=True) as proxy:
        adc = tmp_path / "adc.json"
        point_gke_at(cloud, plane, proxy.address, plane.bearer_token(), adc)
        monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(adc))
        monkeypatch.setenv("KUBECONFIG", str(tmp_path / "no-kubeconfig"))
        monkeypatch.setenv("KINETIC_PROFILES_FILE", str(tmp_path / "profiles.json"))
        for setting, value in (("PROJECT", PROJECT), ("ZONE", ZONE), ("CLUSTER", cluster)):
            monkeypatch.setenv(f"KINETIC_{setting}", value)
        monkeypatch.setenv("KINETIC_NAMESPACE", f"ns-{cluster}")
        monkeypatch.setenv(*QUICK_POLLS)
        yield cloud, proxy, cluster


def _installed_by_kinetic(plane: ControlPlane, path: str, image: str) -> None:
    deployment = plane.request("GET", path)
    assert deployment["spec"]["template"]["spec"]["containers"][0]["image"] == image
    assert "kinetic" in {entry["manager"] for entry in deployment["metadata"]["managedFields"]}


def test_up_installs_the_shipped_lws_and_jobset_converging_after_a_failure_half_way(
    bare_env: tuple[FakeGoogleCloud, ApiProxy, str], bare_k8s: ControlPlane, kinetic: Invoke
) -> None:
    _cloud, proxy, _cluster = bare_env
    proxy.inject(ApiFault(method="PATCH", path_contains="/clusterrolebindings/", code=403))
    failed = kinetic("up")
    assert failed.exit_code == 1 and "applying ClusterRoleBinding" in failed.output
    with pytest.raises(ApiError):
        bare_k8s.request("GET", _DEPLOYMENT)  # stopped before it

    # LeaderWorkerSet is finished; JobSet, next, stops half-way (its API already served).
    proxy.inject(ApiFault(method="PATCH", path_contains="/deployments/jobset-", code=403))
    again = kinetic("up")
    assert again.exit_code == 1
    assert "applying Deployment jobset-controller-manager" in again.output
    assert f"applied {len(_documents())} objects of LeaderWorkerSet {LWS.version}" in again.output
    groups = [group["name"] for group in bare_k8s.request("GET", "/apis")["groups"]]
    assert LWS_GROUP in groups and JOBSET_GROUP in groups
    _installed_by_kinetic(bare_k8s, _DEPLOYMENT, f"registry.k8s.io/lws/lws:{LWS.version}")
    with pytest.raises(ApiError):
        bare_k8s.request("GET", _JOBSET_DEPLOYMENT)

    third = ok(kinetic("up"))
    assert "LeaderWorkerSet API served (v1); kept" in third
    assert f"applied {len(_documents(JOBSET))} objects of JobSet {JOBSET.version}" in third
    _installed_by_kinetic(
        bare_k8s, _JOBSET_DEPLOYMENT, f"registry.k8s.io/jobset/jobset:{JOBSET.version}"
    )

    fourth = ok(kinetic("up"))
    assert "Nothing to do: everything is in place." in fourth
    assert "JobSet API served (v1alpha2); kept" in fourth


@functools.cache
def _kueue_documents() -> tuple[dict[str, Any], ...]:
    """The shipped Kueue manifest's objects (libyaml: the pure-Python parser takes seconds)."""
    return tuple(yaml.load_all(KUEUE.load(), Loader=yaml.CSafeLoader))


_UP_USES = {
    "resourceflavors", "clusterqueues", "localqueues", "workloadpriorityclasses",
    "admissionchecks", "provisioningrequestconfigs",
}  # fmt: skip
"""The kinds of Kueue that ``kinetic up`` writes: the stand-in serves these alone. Its other
CRDs (Workload's alone is 1.4 MB) cost the API server seconds to install, in every test here."""


def _kueue_crds() -> list[dict[str, Any]]:
    """The shipped Kueue's CRDs of what ``kinetic up`` writes, served without its conversion
    webhook: a Kueue whose API is there and whose controller and webhooks are not."""
    crds = [
        copy.deepcopy(d)
        for d in _kueue_documents()
        if d["kind"] == "CustomResourceDefinition" and d["spec"]["names"]["plural"] in _UP_USES
    ]
    for crd in crds:
        crd["spec"].pop("conversion", None)
    return crds


def test_up_installs_the_shipped_kueue_converging_after_a_failure_half_way(
    own_bare_env: tuple[ControlPlane, ApiProxy],
    kinetic: Invoke,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The real manifest: applied after a failure half-way, then recognised and kept. Its
    controller never runs here, so the queues step waits no time and says why it stops."""
    plane, proxy = own_bare_env
    monkeypatch.delenv(KUEUE.source_setting.env)
    monkeypatch.delenv(KUEUE.checksum_setting.env)
    monkeypatch.setattr(kueue_queues, "READY_WAIT_S", 0.0)
    deployment_path = "/apis/apps/v1/namespaces/kueue-system/deployments/kueue-controller-manager"
    proxy.inject(ApiFault(method="PATCH", path_contains="/deployments/kueue-", code=403))
    failed = kinetic("up")
    assert failed.exit_code == 1 and "applying Deployment kueue-controller-manager" in failed.output
    with pytest.raises(ApiError):
        plane.request("GET", deployment_path)

    again = kinetic("up")
    assert f"applied {len(_kueue_documents())} objects of Kueue {KUEUE.version}" in again.output
    assert again.exit_code == 1
    assert (
        "Kueue is not running after 0 s (its controller kueue-system/kueue-controller-"
        "manager has 0 of 1 replicas available)" in again.output
    )
    deployment = plane.request("GET", deployment_path)
    image = deployment["spec"]["template"]["spec"]["containers"][0]["image"]
    assert image == f"registry.k8s.io/kueue/kueue:{KUEUE.version}"
    assert "kinetic" in {entry["manager"] for entry in deployment["metadata"]["managedFields"]}

    planned = ok(kinetic("up", "--dry-run"))
    assert "Kueue API served (v1beta2); kept" in planned
    assert "install Kueue" not in planned
    assert "+ create Kueue queues kinetic (share 1)" in planned


def test_a_gpu_driver_installer_named_by_its_checksum_is_installed_for_unmanaged_gpu_pools(
    bare_env: tuple[FakeGoogleCloud, ApiProxy, str],
    bare_k8s: ControlPlane,
    kinetic: Invoke,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    cloud, _proxy, cluster = bare_env
    ok(kinetic("up"))
    add_unmanaged_gpu_pool(cloud, cluster)
    noted = ok(kinetic("up", "--dry-run"))
    assert "GPU pools without GKE-managed drivers: old-gpus" in noted
    assert "No NVIDIA driver installer ships with Kinetic" in noted

    installer = tmp_path / "installer.yaml"
    installer.write_text(yaml.safe_dump(_daemonset()))
    monkeypatch.setenv("KINETIC_GPU_DRIVER_MANIFEST", str(installer))
    monkeypatch.setenv(
        "KINETIC_GPU_DRIVER_MANIFEST_SHA256", hashlib.sha256(installer.read_bytes()).hexdigest()
    )
    installed = ok(kinetic("up"))
    assert "applied 1 objects of NVIDIA driver installer" in installed
    bare_k8s.request(
        "GET", "/apis/apps/v1/namespaces/kube-system/daemonsets/nvidia-driver-installer"
    )
    assert "GPU drivers installed" in ok(kinetic("up"))


def _daemonset() -> dict[str, object]:
    labels = {"k8s-app": "nvidia-driver-installer"}
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": "nvidia-driver-installer", "namespace": "kube-system"},
        "spec": {
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "nodeSelector": {"cloud.google.com/gke-accelerator": "nvidia-l4"},
                    "containers": [{"name": "pause", "image": "registry.k8s.io/pause:3.10"}],
                },
            },
        },
    }


def test_the_endpoint_certificate_must_be_the_clusters_own(
    bare_env: tuple[FakeGoogleCloud, ApiProxy, str], real_k8s: ControlPlane, kinetic: Invoke
) -> None:
    """A CA other than the cluster's (here: another control plane's) is not trusted."""
    cloud, _proxy, _cluster = bare_env
    other = base64.b64encode(real_k8s.pki.ca_cert.read_bytes()).decode()
    cloud.container.ca_certificate = other
    failed = kinetic("up")
    assert failed.exit_code == 1
    assert "CERTIFICATE_VERIFY_FAILED" in failed.output or "certificate" in failed.output
