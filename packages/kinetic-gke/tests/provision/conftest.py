"""Fixtures for the provisioning tests: the Google Cloud fake, fake-gcs-server and the real
control plane, with Kinetic's settings pointing at them.

The fake GKE API reports the control plane (behind a TLS proxy that can inject faults) as each
cluster's endpoint, with its CA; the Application Default Credentials are an ``authorized_user``
file whose token comes from the fake's OAuth endpoint and is a token the API server accepts. So
``kinetic up`` reaches the cluster exactly as on GKE, with no kubeconfig at all.
"""

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

sys.path.insert(0, str(Path(__file__).resolve().parent))

from provision_support import Invoke, point_kinetic_at, remove_kinetic_queues, write_kubeconfig

from kinetic_testing.controlplane.cluster import ControlPlane
from kinetic_testing.controlplane.proxy import ApiProxy
from kinetic_testing.fake_gcs import FakeGcsServer
from kinetic_testing.gcp_fake import FakeGoogleCloud


@pytest.fixture
def cloud(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeGoogleCloud]:
    with FakeGoogleCloud(polls_until_done=2) as fake:
        monkeypatch.setenv("KINETIC_GCP_API_ENDPOINT", fake.url)
        yield fake


@pytest.fixture(scope="session")
def cluster_token(real_k8s: ControlPlane) -> str:
    return real_k8s.bearer_token()


@pytest.fixture
def cluster_api(real_k8s: ControlPlane) -> Iterator[ApiProxy]:
    """The API server as the GKE endpoint clusters report: HTTPS, faults on demand."""
    with ApiProxy(real_k8s, tls=True) as proxy:
        yield proxy


@pytest.fixture
def cluster_name(request: pytest.FixtureRequest) -> str:
    """A cluster name of this test's own, so bucket names never collide on the shared fake."""
    return "kc-" + str(abs(hash(request.node.nodeid)) % 10**8)


@pytest.fixture
def up_env(
    cloud: FakeGoogleCloud,
    fake_gcs: FakeGcsServer,
    real_k8s: ControlPlane,
    cluster_api: ApiProxy,
    cluster_token: str,
    k8s_namespace: str,
    cluster_name: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[FakeGoogleCloud]:
    """Settings for `kinetic up` and friends: the fakes, the control plane (this test's
    namespace), a profiles file of the test's own, and no kubeconfig (`up` needs none).

    Each test's cluster is a new one, but the control plane is the worker's: the cluster-wide
    Kueue objects Kinetic made are removed afterwards, as a new cluster would not have them."""
    point_kinetic_at(
        monkeypatch, cloud, real_k8s, cluster_api.address, cluster_token, tmp_path,
        cluster=cluster_name, namespace=k8s_namespace,
    )  # fmt: skip
    yield cloud
    remove_kinetic_queues(real_k8s)


@pytest.fixture
def kubeconfig(
    up_env: FakeGoogleCloud,
    real_k8s: ControlPlane,
    cluster_name: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> Path:
    """The kubeconfig `gcloud container clusters get-credentials` would have written: the
    context Kinetic's backends (and `doctor`) use, named as gcloud names it."""
    path = write_kubeconfig(real_k8s, cluster_name, tmp_path / "kubeconfig")
    monkeypatch.setenv("KUBECONFIG", str(path))
    return path


@pytest.fixture
def kinetic() -> Invoke:
    """``kinetic("up", "--dry-run")``: kinetic-gke's commands in-process, under the stand-in for
    the kinetic command line (the client is not installed here), stdout and stderr apart."""
    from kinetic_testing.command_host import stand_in_command_line

    def run(*args: str, input: str | None = None) -> Result:
        return CliRunner().invoke(
            stand_in_command_line, list(args), input=input, prog_name="kinetic"
        )

    return run
