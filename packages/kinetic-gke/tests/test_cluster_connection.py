"""Reaching a cluster directly, as `kinetic up` reaches one it has just created: the endpoint
and CA the GKE API reports, a bearer token of the Google credentials, no kubeconfig."""

import base64
from pathlib import Path

import pytest

from kinetic_gke.gcp import ClusterView, access_token_source, cluster_connection
from kinetic_gke.k8s import PermissionDenied
from kinetic_gke.pools import Autoprovisioning
from kinetic_protocol import ConfigError
from kinetic_testing.controlplane.cluster import ControlPlane
from kinetic_testing.gcp_fake import FakeGoogleCloud

pytestmark = pytest.mark.realk8s


def _view(plane: ControlPlane, endpoint: str = "") -> ClusterView:
    return ClusterView(
        name="kinetic-cluster", location="us-central1-a", status="RUNNING", pools=(),
        autoprovisioning=Autoprovisioning(),
        endpoint=endpoint or plane.server.removeprefix("https://"),
        ca_certificate=base64.b64encode(plane.pki.ca_cert.read_bytes()).decode(),
    )  # fmt: skip


def test_a_token_the_cluster_accepts_reaches_it_and_is_asked_for_each_request(
    real_k8s: ControlPlane, k8s_namespace: str
) -> None:
    token, asked = real_k8s.bearer_token(), []

    def source() -> str:
        asked.append(1)
        return token

    connection = cluster_connection(_view(real_k8s), k8s_namespace, token=source)
    found = connection.read("reading the namespace", connection.core.read_namespace, k8s_namespace)
    assert found["metadata"]["name"] == k8s_namespace
    connection.list_pods("app=none")
    assert len(asked) == 2  # so an expired token is replaced before the next call


def test_a_token_the_cluster_refuses_is_permission_denied(real_k8s: ControlPlane) -> None:
    connection = cluster_connection(_view(real_k8s), "default", token=lambda: "not-a-token")
    with pytest.raises(PermissionDenied):
        connection.list_pods("app=none")


def test_a_cluster_without_an_endpoint_yet_is_a_clear_error(real_k8s: ControlPlane) -> None:
    view = _view(real_k8s)
    pending = ClusterView(**{**view.__dict__, "endpoint": "", "status": "PROVISIONING"})
    with pytest.raises(ConfigError, match=r"PROVISIONING.*no endpoint yet"):
        cluster_connection(pending, "default", token=lambda: "unused")


def test_the_google_credentials_token_is_what_the_cluster_sees(
    real_k8s: ControlPlane, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Application Default Credentials (a service account key whose token endpoint is the
    fake's) give the token: google-auth fetches it, the API server accepts it."""
    with FakeGoogleCloud() as fake:
        fake.apis.access_token = real_k8s.bearer_token()
        monkeypatch.setenv(
            "GOOGLE_APPLICATION_CREDENTIALS", str(fake.apis.credentials_file(tmp_path / "a.json"))
        )
        connection = cluster_connection(_view(real_k8s), "default")
        connection.list_pods("app=none")
        connection.list_pods("app=none")
        assert fake.count("oauth2.token") == 1  # fetched once, reused while valid


def test_no_google_credentials_is_the_login_command(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", "/nonexistent/adc.json")
    with pytest.raises(ConfigError, match="gcloud auth application-default login"):
        access_token_source()
