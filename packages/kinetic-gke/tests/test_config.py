"""Settings of the gke backend: where its bucket is, which kubeconfig context it uses, and the
errors that say which command to run when a credential, a cluster or a setting is missing."""

import hashlib
import json
import re
from pathlib import Path

import msgspec
import pytest
from gke_test_support import PROJECT, QUICK, RecordFactory, wait_for

from kinetic_gke import GKEBackend, default_bucket_name
from kinetic_gke import settings as declared
from kinetic_gke.k8s import kube_context_name
from kinetic_protocol import BackendSettings, ConfigError, JobStatus
from kinetic_protocol.settings import resolve_declared
from kinetic_testing.controlplane.cluster import ControlPlane
from kinetic_testing.nodeagent import NodeAgent

GCS_BUCKET = re.compile(r"^[a-z0-9][a-z0-9_.-]{1,61}[a-z0-9]$")
SETTINGS = BackendSettings(project="my-proj", zone="europe-west4-a", cluster="train")


def _kubeconfig(plane: ControlPlane, path: Path, *, context: str) -> Path:
    """A copy of the control plane's admin kubeconfig whose one context is named ``context``."""
    doc = json.loads(plane.kubeconfig.read_text())
    doc["contexts"][0]["name"] = doc["current-context"] = context
    path.write_text(json.dumps(doc))
    return path


@pytest.fixture(autouse=True)
def _no_outside_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (
        "KUBECONFIG",
        "KINETIC_KUBE_CONTEXT",
        "KINETIC_GKE_POLL",
        "KINETIC_UNSCHEDULABLE_TIMEOUT",
        "KINETIC_SERVICE_ACCOUNT",
    ):
        monkeypatch.delenv(name, raising=False)


# -- bucket and context names ----------------------------------------------------------------


def test_the_default_bucket_is_project_kinetic_cluster() -> None:
    assert default_bucket_name("my-proj", "kinetic-cluster") == "my-proj-kinetic-kinetic-cluster"
    assert GKEBackend(SETTINGS).store_uri == "gs://my-proj-kinetic-train"


def test_kinetic_store_overrides_the_default_bucket() -> None:
    backend = GKEBackend(BackendSettings(project="my-proj", store_uri="gs://elsewhere"))
    assert backend.store_uri == "gs://elsewhere"


@pytest.mark.parametrize(
    ("project", "cluster"),
    [("My_Proj", "GPU.Cluster"), ("example.com:proj", "c"), ("p" * 30, "c" * 40)],
)
def test_default_bucket_names_are_valid_gcs_bucket_names(project: str, cluster: str) -> None:
    name = default_bucket_name(project, cluster)
    assert GCS_BUCKET.match(name), name
    assert len(name) <= 63


def test_the_kube_context_is_the_one_gcloud_writes() -> None:
    assert kube_context_name("my-proj", "europe-west4-a", "train") == (
        "gke_my-proj_europe-west4-a_train"
    )


def test_the_entry_point_names_the_backend_class_with_its_capabilities() -> None:
    from importlib.metadata import entry_points

    (entry,) = [ep for ep in entry_points(group="kinetic.backends") if ep.name == "gke"]
    factory = entry.load()
    assert factory is GKEBackend
    assert factory.capabilities.container_image
    assert not factory.capabilities.multi_host
    assert {spec.env for spec in factory.declared_settings} >= {"KINETIC_SERVICE_ACCOUNT"}
    backend = factory(SETTINGS)
    assert backend.name == "gke"


# -- missing or wrong settings ---------------------------------------------------------------


def test_a_missing_project_is_a_config_error_saying_how_to_set_it() -> None:
    with pytest.raises(ConfigError, match="KINETIC_PROJECT") as caught:
        GKEBackend(BackendSettings())
    assert "kinetic profile create" in str(caught.value)


def test_a_missing_kubeconfig_names_the_gcloud_command_for_this_cluster(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    missing = tmp_path / "no-such-kubeconfig"
    monkeypatch.setenv("KUBECONFIG", str(missing))
    with pytest.raises(ConfigError) as caught:
        _ = GKEBackend(SETTINGS).connection
    message = str(caught.value)
    assert str(missing) in message
    assert (
        "gcloud container clusters get-credentials train --location europe-west4-a "
        "--project my-proj" in message
    )


@pytest.mark.realk8s
def test_a_kubeconfig_without_the_clusters_context_names_the_command_and_the_contexts(
    real_k8s: ControlPlane, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(
        "KUBECONFIG", str(_kubeconfig(real_k8s, tmp_path / "config", context="other"))
    )
    with pytest.raises(ConfigError) as caught:
        _ = GKEBackend(SETTINGS).connection
    message = str(caught.value)
    assert "'gke_my-proj_europe-west4-a_train'" in message
    assert "other" in message
    assert "gcloud container clusters get-credentials train" in message
    assert "KINETIC_KUBE_CONTEXT" in message


def test_a_malformed_kubeconfig_is_a_config_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    broken = tmp_path / "config"
    broken.write_text("{not: [valid")
    monkeypatch.setenv("KUBECONFIG", str(broken))
    with pytest.raises(ConfigError, match=str(broken)):
        _ = GKEBackend(SETTINGS).connection


@pytest.mark.parametrize("raw", ["fast", "1", "2,1", "0,1", "1,2,3"])
def test_a_bad_poll_setting_is_a_config_error(monkeypatch: pytest.MonkeyPatch, raw: str) -> None:
    monkeypatch.setenv("KINETIC_GKE_POLL", raw)
    with pytest.raises(ConfigError, match=re.escape(repr(raw))):
        GKEBackend(SETTINGS)


def test_the_poll_setting_sets_the_poll_bounds(monkeypatch: pytest.MonkeyPatch) -> None:
    assert GKEBackend(SETTINGS).poll_bounds == (1.0, 10.0)
    monkeypatch.setenv("KINETIC_GKE_POLL", "0.5,4")
    assert GKEBackend(SETTINGS).poll_bounds == (0.5, 4.0)


def test_a_backend_reads_its_settings_once_when_it_is_built(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every manifest of one backend gets the pod settings it was built with; a backend
    built after a change gets the new ones."""
    monkeypatch.setenv("KINETIC_POD_CPU", "2")
    monkeypatch.setenv("KINETIC_SERVICE_ACCOUNT", "sa-one")
    backend = GKEBackend(SETTINGS)
    monkeypatch.setenv("KINETIC_POD_CPU", "3")
    monkeypatch.setenv("KINETIC_SERVICE_ACCOUNT", "sa-two")
    monkeypatch.setenv("KINETIC_RUN_AS_ROOT", "1")
    kept = backend.pod_options
    assert (kept.cpu, kept.service_account, kept.run_as_root) == ("2", "sa-one", False)
    fresh = GKEBackend(SETTINGS).pod_options
    assert (fresh.cpu, fresh.service_account, fresh.run_as_root) == ("3", "sa-two", True)


def test_the_settings_the_client_resolved_are_the_ones_a_backend_uses(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``BackendSettings.declared`` (the client's resolution) wins over the environment the
    backend is built in; a declared setting it does not carry is read at build time."""
    monkeypatch.setenv("KINETIC_POD_CPU", "2")
    monkeypatch.setenv("KINETIC_GKE_POLL", "0.5,4")
    resolved = resolve_declared([declared.POD_CPU], {"KINETIC_POD_CPU": "7"})
    backend = GKEBackend(msgspec.structs.replace(SETTINGS, declared=resolved))
    assert backend.pod_options.cpu == "7"
    assert backend.poll_bounds == (0.5, 4.0)


@pytest.mark.parametrize("raw", ["8476", "1,2,x", "1,1,2", "1,2,70000", "1,2,3,4"])
def test_bad_host_group_ports_are_a_config_error(monkeypatch: pytest.MonkeyPatch, raw: str) -> None:
    monkeypatch.setenv("KINETIC_HOST_GROUP_PORTS", raw)
    with pytest.raises(ConfigError, match=r"KINETIC_HOST_GROUP_PORTS.*" + re.escape(repr(raw))):
        GKEBackend(SETTINGS)


def test_host_group_ports_are_every_pods_when_set_and_the_defaults_otherwise(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert GKEBackend(SETTINGS).pod_options.group_ports is None
    monkeypatch.setenv("KINETIC_HOST_GROUP_PORTS", "4001,4002,4003")
    ports = GKEBackend(SETTINGS).pod_options.group_ports
    assert ports is not None
    assert (ports.coordinator, ports.torch, ports.megascale) == (4001, 4002, 4003)


def test_a_bad_unschedulable_timeout_is_a_config_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KINETIC_UNSCHEDULABLE_TIMEOUT", "ten minutes")
    with pytest.raises(ConfigError, match=r"KINETIC_UNSCHEDULABLE_TIMEOUT.*'ten minutes'"):
        GKEBackend(SETTINGS)


def test_a_multi_host_accelerator_is_refused_pointing_to_pathways(record: RecordFactory) -> None:
    """One pod holds one host's share; the slice's other hosts would never join it."""
    with pytest.raises(ConfigError, match="pathways") as caught:
        GKEBackend(SETTINGS).submit(record(accelerator="tpu-v6e-16"))
    assert "4 TPU hosts" in str(caught.value)


def test_a_record_without_an_image_is_refused(record: RecordFactory) -> None:
    with pytest.raises(ConfigError, match="no container image"):
        GKEBackend(SETTINGS).submit(record(image_uri=""))


# -- the kubeconfig is read, never written ----------------------------------------------------


@pytest.mark.realk8s
def test_the_named_context_is_used_and_the_kubeconfig_is_left_as_it_was(
    real_k8s: ControlPlane,
    k8s_namespace: str,
    agent: NodeAgent,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    record: RecordFactory,
) -> None:
    """The file's current context points nowhere; the backend uses the cluster's own context
    (``gke_<project>_<zone>_<cluster>``) without switching to it or rewriting anything."""
    context = kube_context_name(PROJECT, "us-central1-a", "kinetic-cluster")
    doc = json.loads(_kubeconfig(real_k8s, tmp_path / "admin.json", context=context).read_text())
    doc["clusters"].append({"name": "elsewhere", "cluster": {"server": "https://192.0.2.1"}})
    doc["users"].append({"name": "elsewhere", "user": {"token": "t"}})
    doc["contexts"].append(
        {"name": "elsewhere", "context": {"cluster": "elsewhere", "user": "elsewhere"}}
    )
    doc["current-context"] = "elsewhere"
    kubeconfig = tmp_path / "config"
    kubeconfig.write_text(json.dumps(doc))
    before = hashlib.sha256(kubeconfig.read_bytes()).hexdigest()
    monkeypatch.setenv("KUBECONFIG", str(kubeconfig))

    backend = GKEBackend(
        BackendSettings(
            project=PROJECT,
            zone="us-central1-a",
            cluster="kinetic-cluster",
            namespace=k8s_namespace,
        ),
        command=QUICK,
    )
    job = record("ctx-1")
    backend.submit(job)
    wait_for(
        lambda: backend.statuses([job])["ctx-1"].status is JobStatus.SUCCEEDED,
        message="the job to succeed through the named context",
    )
    backend.delete(job, timeout=10, poll_interval=0.05)
    assert hashlib.sha256(kubeconfig.read_bytes()).hexdigest() == before
    assert json.loads(kubeconfig.read_text())["current-context"] == "elsewhere"
