"""Reaching a cluster directly, as `kinetic up` reaches one it has just created: the endpoint
and CA the GKE API reports, a bearer token of the Google credentials, no kubeconfig."""

import base64
from pathlib import Path
from typing import Any

import pytest

from kinetic_gke.gcp import ClusterView, access_token_source, cluster_connection
from kinetic_gke.k8s import ClusterConnection, PermissionDenied
from kinetic_gke.pools import Autoprovisioning
from kinetic_protocol import ConfigError
from kinetic_testing.controlplane.cluster import ControlPlane
from kinetic_testing.gcp_fake import FakeGoogleCloud

pytestmark = pytest.mark.realk8s


def _view(plane: ControlPlane, endpoint: str = "") -> ClusterView:
    return ClusterView(
        name="kinetic-cluster",
        location="us-central1-a",
        status="RUNNING",
        pools=(),
        autoprovisioning=Autoprovisioning(),
        endpoint=endpoint or plane.server.removeprefix("https://"),
        ca_certificate=base64.b64encode(plane.pki.ca_cert.read_bytes()).decode(),
    )


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


def test_a_large_listing_comes_gzipped_and_is_read_whole(
    real_k8s: ControlPlane, k8s_namespace: str
) -> None:
    """The API server compresses an answer over 128 KiB when asked: a batch's pod listing
    (6 KB a pod) crosses that at about 25 pods. Ten 20 KB ConfigMaps stand in for them."""
    from kubernetes.client import rest

    api = real_k8s.api_client()
    connection = ClusterConnection(api, k8s_namespace)
    for i in range(10):
        connection.core.create_namespaced_config_map(
            k8s_namespace, {"metadata": {"name": f"big-{i}"}, "data": {"text": f"{i}" * 20_000}}
        )
    encodings: list[str | None] = []
    real = rest.RESTClientObject.request

    def request(self: Any, *args: Any, **kwargs: Any) -> Any:
        response = real(self, *args, **kwargs)
        encodings.append(response.headers.get("Content-Encoding"))
        return response

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(rest.RESTClientObject, "request", request)
        listing = connection.read(
            "listing config maps", connection.core.list_namespaced_config_map, k8s_namespace
        )
    api.close()
    assert encodings == ["gzip"]
    big = sorted(
        (item for item in listing["items"] if item["metadata"]["name"].startswith("big-")),
        key=lambda item: item["metadata"]["name"],
    )
    assert [item["data"]["text"] for item in big] == [f"{i}" * 20_000 for i in range(10)]
