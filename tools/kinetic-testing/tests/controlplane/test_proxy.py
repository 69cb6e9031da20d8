"""ApiProxy: forwards to the real API server, records what passed, and injects faults."""

from __future__ import annotations

import http.client
import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes import client, config, watch
from kubernetes.client.exceptions import ApiException

from kinetic_testing.controlplane.cluster import ControlPlane
from kinetic_testing.controlplane.proxy import ApiFault, ApiProxy

pytestmark = pytest.mark.realk8s

_POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "idle", "labels": {"app": "proxied"}},
    "spec": {"containers": [{"name": "main", "image": "python:3.11-slim"}]},
}


@pytest.fixture
def proxy(real_k8s: ControlPlane) -> Iterator[ApiProxy]:
    with ApiProxy(real_k8s) as api_proxy:
        yield api_proxy


@pytest.fixture
def core(
    real_k8s: ControlPlane, proxy: ApiProxy, k8s_namespace: str, tmp_path: Path
) -> Iterator[client.CoreV1Api]:
    """The official client, configured by the proxy's kubeconfig."""
    path = proxy.kubeconfig(tmp_path / "kubeconfig", context="proxied", namespace=k8s_namespace)
    api = config.new_client_from_config(  # type: ignore[no-untyped-call]
        config_file=str(path), context="proxied", persist_config=False
    )
    yield client.CoreV1Api(api)
    api.close()
    # No node agent runs here: leave no unscheduled pod for another test's agent to bind.
    admin = real_k8s.api_client()
    client.CoreV1Api(admin).delete_collection_namespaced_pod(k8s_namespace, grace_period_seconds=0)
    admin.close()


def test_requests_are_forwarded_and_recorded(
    proxy: ApiProxy, core: client.CoreV1Api, k8s_namespace: str
) -> None:
    core.create_namespaced_pod(k8s_namespace, _POD)
    listed = core.list_namespaced_pod(k8s_namespace, label_selector="app=proxied")
    assert [pod.metadata.name for pod in listed.items] == ["idle"]
    pods = f"/api/v1/namespaces/{k8s_namespace}/pods"
    assert [(r.method, r.path) for r in proxy.requests] == [("POST", pods), ("GET", pods)]
    assert proxy.requests[1].params == {"labelSelector": "app=proxied"}
    proxy.clear()
    assert proxy.requests == []


def test_a_fault_answers_its_code_for_its_times_then_requests_pass_again(
    proxy: ApiProxy, core: client.CoreV1Api, k8s_namespace: str
) -> None:
    fault = proxy.inject(ApiFault(method="GET", path_contains="/pods", code=503, times=2))
    other = proxy.inject(ApiFault(method="DELETE", code=500, times=None))
    for _ in range(2):
        with pytest.raises(ApiException) as raised:
            core.list_namespaced_pod(k8s_namespace)
        assert raised.value.status == 503
        assert "injected fault" in str(raised.value.body)
    assert core.list_namespaced_pod(k8s_namespace).items == []
    assert (fault.hits, other.hits) == (2, 0)
    assert len(proxy.requests) == 3, "faulted requests are recorded too"


def test_a_delay_fault_slows_the_answer_and_passes_it_on(
    proxy: ApiProxy, core: client.CoreV1Api, k8s_namespace: str
) -> None:
    slow = proxy.inject(ApiFault(delay_s=0.3, times=1))
    started = time.monotonic()
    assert core.list_namespaced_pod(k8s_namespace).items == []
    assert time.monotonic() - started >= 0.3
    assert slow.hits == 1


def test_an_empty_answer_keeps_the_connection_usable(
    proxy: ApiProxy, core: client.CoreV1Api, k8s_namespace: str
) -> None:
    """The log of an unscheduled pod is HTTP 204, which has no body: no Transfer-Encoding
    either (RFC 9110 15.3.5; a strict client reads a chunked end as the next response)."""
    core.create_namespaced_pod(k8s_namespace, _POD)
    pod = f"/api/v1/namespaces/{k8s_namespace}/pods/idle"
    connection = http.client.HTTPConnection(proxy.url.removeprefix("http://"), timeout=10)
    try:
        for _ in range(2):
            connection.request("GET", f"{pod}/log")
            empty = connection.getresponse()
            assert (empty.status, empty.read()) == (204, b"")
            assert empty.getheader("Transfer-Encoding") is None
            connection.request("GET", pod)
            answer = connection.getresponse()
            assert answer.status == 200
            assert json.loads(answer.read())["metadata"]["name"] == "idle"
    finally:
        connection.close()


def test_a_watch_streams_through_the_proxy(
    proxy: ApiProxy, core: client.CoreV1Api, k8s_namespace: str
) -> None:
    start = core.list_namespaced_pod(k8s_namespace).metadata.resource_version
    core.create_namespaced_pod(k8s_namespace, _POD)
    watcher = watch.Watch()
    events = watcher.stream(
        core.list_namespaced_pod, k8s_namespace, resource_version=start, timeout_seconds=30
    )
    first = next(iter(events))
    watcher.stop()
    assert (first["type"], first["object"].metadata.name) == ("ADDED", "idle")
    assert any(r.params.get("watch") == "true" for r in proxy.requests)


def test_an_after_fault_lets_the_request_act_and_loses_its_answer(
    proxy: ApiProxy, core: client.CoreV1Api, k8s_namespace: str
) -> None:
    lost = proxy.inject(ApiFault(method="POST", path_contains="/pods", code=500, after=True))
    with pytest.raises(ApiException) as raised:
        core.create_namespaced_pod(k8s_namespace, _POD)
    assert raised.value.status == 500
    assert lost.hits == 1
    assert core.read_namespaced_pod("idle", k8s_namespace).metadata.name == "idle"


def test_a_hidden_api_group_is_absent_from_discovery_and_its_paths(
    proxy: ApiProxy, core: client.CoreV1Api
) -> None:
    apis = client.ApisApi(core.api_client)
    group = "leaderworkerset.x-k8s.io"
    assert group in [g.name for g in apis.get_api_versions().groups]
    proxy.hide_api_group(group)
    assert group not in [g.name for g in apis.get_api_versions().groups]
    assert "batch" in [g.name for g in apis.get_api_versions().groups]
    with pytest.raises(ApiException) as raised:
        client.CustomObjectsApi(core.api_client).list_cluster_custom_object(
            group, "v1", "leaderworkersets"
        )
    assert raised.value.status == 404
    proxy.show_api_groups()
    assert group in [g.name for g in apis.get_api_versions().groups]


def test_over_tls_it_is_reached_as_a_gke_endpoint_with_the_planes_ca_and_a_token(
    real_k8s: ControlPlane,
) -> None:
    with ApiProxy(real_k8s, tls=True) as secure:
        assert secure.url.startswith("https://127.0.0.1:")
        configuration = client.Configuration()
        configuration.host = secure.url
        configuration.ssl_ca_cert = str(real_k8s.pki.ca_cert)
        configuration.api_key = {"authorization": f"Bearer {real_k8s.bearer_token()}"}
        with client.ApiClient(configuration) as api:
            names = [ns.metadata.name for ns in client.CoreV1Api(api).list_namespace().items]
        assert "default" in names
        assert secure.requests[-1].path == "/api/v1/namespaces"


def test_a_plain_upstream_is_forwarded_with_its_faults(real_k8s: ControlPlane) -> None:
    """Any HTTP server can sit behind it (here another proxy, which needs no credentials)."""
    with ApiProxy(real_k8s) as inner, ApiProxy(upstream=inner.url) as outer:
        outer.inject(ApiFault(path_contains="/version", code=503))
        statuses, body = [], b""
        for _ in range(2):
            connection = http.client.HTTPConnection(outer.address, timeout=10)
            try:
                connection.request("GET", "/version")
                answer = connection.getresponse()
                statuses.append(answer.status)
                body = answer.read()
            finally:
                connection.close()
        assert statuses == [503, 200]
        assert "gitVersion" in json.loads(body)
        assert [r.path for r in inner.requests] == ["/version"]
