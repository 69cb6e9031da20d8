"""Fixtures for the provisioning tests: the Google Cloud fake, fake-gcs-server and the real
control plane, with Kinetic's settings pointing at them."""

import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

sys.path.insert(0, str(Path(__file__).resolve().parent))

from provision_support import PROJECT, ZONE, Invoke

from kinetic_testing.controlplane.cluster import ControlPlane
from kinetic_testing.fake_gcs import FakeGcsServer
from kinetic_testing.gcp_fake import FakeGoogleCloud


@pytest.fixture
def cloud(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeGoogleCloud]:
    with FakeGoogleCloud(polls_until_done=2) as fake:
        monkeypatch.setenv("KINETIC_GCP_API_ENDPOINT", fake.url)
        yield fake


@pytest.fixture
def cluster_name(request: pytest.FixtureRequest) -> str:
    """A cluster name of this test's own, so bucket names never collide on the shared fake."""
    return "kc-" + str(abs(hash(request.node.nodeid)) % 10**8)


@pytest.fixture
def up_env(
    cloud: FakeGoogleCloud,
    fake_gcs: FakeGcsServer,
    real_k8s: ControlPlane,
    k8s_namespace: str,
    cluster_name: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> FakeGoogleCloud:
    """Settings for `kinetic up` and friends: the fakes, the control plane (this test's
    namespace), a profiles file of the test's own."""
    for name in list(os.environ):
        if name.startswith("KINETIC_") and name != "KINETIC_GCP_API_ENDPOINT":
            monkeypatch.delenv(name)
    kubeconfig = tmp_path / "kubeconfig"
    shutil.copyfile(real_k8s.kubeconfig, kubeconfig)
    monkeypatch.setenv("KUBECONFIG", str(kubeconfig))
    monkeypatch.setenv("KINETIC_KUBE_CONTEXT", real_k8s.context)
    monkeypatch.setenv("KINETIC_PROFILES_FILE", str(tmp_path / "profiles.json"))
    monkeypatch.setenv("KINETIC_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("KINETIC_PROJECT", PROJECT)
    monkeypatch.setenv("KINETIC_ZONE", ZONE)
    monkeypatch.setenv("KINETIC_CLUSTER", cluster_name)
    monkeypatch.setenv("KINETIC_NAMESPACE", k8s_namespace)
    return cloud


@pytest.fixture
def kinetic() -> Invoke:
    """``kinetic("up", "--dry-run")``: the CLI in-process, stdout and stderr apart."""
    from kinetic.cli import cli

    def run(*args: str, input: str | None = None) -> Result:
        return CliRunner().invoke(cli, list(args), input=input, prog_name="kinetic")

    return run
