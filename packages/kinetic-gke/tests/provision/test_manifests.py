"""The LeaderWorkerSet, JobSet and Kueue manifests that ship with Kinetic, and how a manifest is
trusted: by the sha256 pinned for it, checked before anything is applied."""

import hashlib
from pathlib import Path

import pytest
import yaml  # type: ignore[import-untyped]

from kinetic_gke.k8s.kueue_api import KUEUE_VERSION
from kinetic_gke.provision.manifests import GPU_DRIVER, JOBSET, KUEUE, LWS
from kinetic_protocol import ConfigError
from kinetic_testing.controlplane.versions import PINS


def test_the_shipped_manifest_is_the_pinned_release_the_test_control_plane_runs() -> None:
    data = LWS.load()
    assert hashlib.sha256(data).hexdigest() == LWS.sha256
    assert LWS.version == PINS.lws
    assert Path(LWS.source).is_file()  # inside the installed package, no download
    documents = [d for d in yaml.safe_load_all(data) if d]
    [deployment] = [d for d in documents if d["kind"] == "Deployment"]
    [container] = deployment["spec"]["template"]["spec"]["containers"]
    assert container["image"] == f"registry.k8s.io/lws/lws:{LWS.version}"
    assert {d["kind"] for d in documents} >= {
        "Namespace", "CustomResourceDefinition", "MutatingWebhookConfiguration",
        "ValidatingWebhookConfiguration", "ClusterRole", "Service",
    }  # fmt: skip


def test_the_shipped_jobset_is_the_release_the_test_control_plane_runs() -> None:
    data = JOBSET.load()
    assert hashlib.sha256(data).hexdigest() == JOBSET.sha256
    assert JOBSET.version == PINS.jobset
    assert Path(JOBSET.source).is_file()
    documents = [d for d in yaml.load_all(data, Loader=yaml.CSafeLoader) if d]
    [deployment] = [d for d in documents if d["kind"] == "Deployment"]
    [container] = deployment["spec"]["template"]["spec"]["containers"]
    # The promoted image, not the staging one the module's kustomization names.
    assert container["image"] == f"registry.k8s.io/jobset/jobset:{JOBSET.version}"
    [crd] = [d for d in documents if d["kind"] == "CustomResourceDefinition"]
    assert crd["metadata"]["name"] == "jobsets.jobset.x-k8s.io"
    # Installs converge by checking the first object and the last (see unfinished_install).
    assert documents[0]["kind"] == "Namespace"
    assert documents[-1]["kind"] == "ValidatingWebhookConfiguration"


def test_the_shipped_kueue_is_the_release_kinetic_speaks_with_its_integrations_on() -> None:
    data = KUEUE.load()
    assert hashlib.sha256(data).hexdigest() == KUEUE.sha256
    assert KUEUE.version == KUEUE_VERSION
    assert Path(KUEUE.source).is_file()
    documents = [d for d in yaml.load_all(data, Loader=yaml.CSafeLoader) if d]
    [deployment] = [d for d in documents if d["kind"] == "Deployment"]
    [container] = deployment["spec"]["template"]["spec"]["containers"]
    assert container["image"] == f"registry.k8s.io/kueue/kueue:{KUEUE.version}"
    [config_map] = [d for d in documents if d["kind"] == "ConfigMap"]
    [config] = [yaml.safe_load(text) for text in config_map["data"].values()]
    assert {
        "batch/job",
        "jobset.x-k8s.io/jobset",
        "leaderworkerset.x-k8s.io/leaderworkerset",
    } <= set(config["integrations"]["frameworks"])
    # Installs converge by checking the first object and the last (see unfinished_install).
    assert documents[0]["kind"] == "Namespace"
    assert documents[-1]["kind"] == "ValidatingWebhookConfiguration"


def test_a_manifest_whose_checksum_differs_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tampered = tmp_path / "lws.yaml"
    tampered.write_bytes(LWS.load().replace(b"  replicas: 2", b"  replicas: 9"))
    monkeypatch.setenv(LWS.source_setting.env, str(tampered))
    monkeypatch.setenv(LWS.checksum_setting.env, LWS.sha256)
    with pytest.raises(ConfigError, match=r"has sha256 [0-9a-f]{64}, not the pinned") as caught:
        LWS.load()
    assert str(tampered) in str(caught.value)
    assert "nothing was applied" in str(caught.value)


def test_an_override_is_used_with_its_own_checksum_and_never_without_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    mirror = tmp_path / "mirror.yaml"
    mirror.write_bytes(b"apiVersion: v1\nkind: Namespace\nmetadata: {name: lws-system}\n")
    monkeypatch.setenv(LWS.source_setting.env, f"file://{mirror}")
    with pytest.raises(ConfigError, match="KINETIC_LWS_MANIFEST_SHA256"):
        LWS.load()
    monkeypatch.setenv(LWS.checksum_setting.env, hashlib.sha256(mirror.read_bytes()).hexdigest())
    assert LWS.load() == mirror.read_bytes()
    monkeypatch.delenv(LWS.source_setting.env)
    with pytest.raises(ConfigError, match="is set but KINETIC_LWS_MANIFEST is not"):
        LWS.load()


def test_no_gpu_driver_installer_ships_so_one_must_be_named() -> None:
    assert not GPU_DRIVER.available
    with pytest.raises(ConfigError, match="KINETIC_GPU_DRIVER_MANIFEST") as caught:
        GPU_DRIVER.load()
    assert GPU_DRIVER.upstream in str(caught.value)
