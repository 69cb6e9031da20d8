"""Cross-cutting API behaviour: discovery, kubeconfig, request log, paging, selectors."""

from __future__ import annotations

import pytest
from kubernetes import client, config
from kubernetes.client.exceptions import ApiException

from kinetic_testing.k8s import LabelSelector, SelectorError

pytestmark = pytest.mark.k8s


def test_discovery_endpoints(kube):
    with kube.sim.api_client() as api:
        version = client.VersionApi(api).get_code()
        groups = client.ApisApi(api).get_api_versions()
        core = client.CoreApi(api).get_api_versions()
        batch = client.BatchV1Api(api).get_api_resources()
    assert (version.major, version.minor) == ("1", "31")
    assert {g.name for g in groups.groups} == {"batch", "leaderworkerset.x-k8s.io"}
    assert core.versions == ["v1"]
    assert "jobs" in {r.name for r in batch.resources}


def test_kubeconfig_loads_with_new_client_from_config(k8s_sim, tmp_path, make_job):
    path = k8s_sim.kubeconfig(tmp_path / "kubeconfig", namespace="default")
    api = config.new_client_from_config(config_file=str(path), context="sim", persist_config=False)
    with api:
        client.BatchV1Api(api).create_namespaced_job("default", make_job("via-kubeconfig", "pass"))
    assert [j["metadata"]["name"] for j in k8s_sim.jobs()] == ["via-kubeconfig"]


def test_request_log_counts_calls(kube, make_job):
    kube.batch.create_namespaced_job("default", make_job("counted", "pass"))
    kube.sim.clear_requests()
    kube.batch.list_namespaced_job("default", label_selector="job-name=counted")
    [request] = kube.sim.requests
    assert (request.method, request.path) == ("GET", "/apis/batch/v1/namespaces/default/jobs")
    assert request.query == {"labelSelector": "job-name=counted"}
    assert kube.sim.count_requests("GET", "/jobs") == 1
    assert kube.sim.count_requests("POST") == 0


def test_list_pagination_with_limit_and_continue(kube, make_job):
    for i in range(5):
        kube.batch.create_namespaced_job("default", make_job(f"p{i}", "pass"))
    names, token = [], None
    while True:
        page = kube.batch.list_namespaced_job("default", limit=2, _continue=token)
        names += [j.metadata.name for j in page.items]
        token = page.metadata._continue
        if not token:
            break
    assert names == [f"p{i}" for i in range(5)]


def test_list_items_and_cluster_wide_list(kube, make_job):
    kube.sim.add_namespace("team")
    kube.batch.create_namespaced_job("team", make_job("t1", "pass"))
    kube.batch.create_namespaced_job("default", make_job("d1", "pass"))
    everything = kube.batch.list_job_for_all_namespaces()
    assert sorted((j.metadata.namespace, j.metadata.name) for j in everything.items) == [
        ("default", "d1"),
        ("team", "t1"),
    ]
    assert everything.kind == "JobList"
    assert everything.metadata.resource_version


def test_watch_is_refused_clearly(kube):
    with pytest.raises(ApiException) as err:
        kube.batch.list_namespaced_job("default", watch=True, _preload_content=False)
    assert err.value.status == 400


def test_bare_pod_gets_server_defaults(kube):
    body = {
        "metadata": {"name": "bare"},
        "spec": {"containers": [{"name": "c", "image": "busybox", "command": ["true"]}]},
    }
    pod = kube.core.create_namespaced_pod("default", body)
    assert pod.spec.restart_policy == "Always"
    assert pod.spec.containers[0].image_pull_policy == "Always"  # untagged means :latest
    assert pod.spec.service_account_name == "default"
    assert pod.status.phase == "Pending"
    assert pod.status.qos_class == "BestEffort"


@pytest.mark.parametrize(
    ("selector", "labels", "expected"),
    [
        ("a=b", {"a": "b"}, True),
        ("a==b", {"a": "c"}, False),
        ("a!=b", {}, True),
        ("a", {"a": ""}, True),
        ("!a", {"a": "x"}, False),
        ("a in (x, y),b notin (z)", {"a": "y"}, True),
        ("a in (x,y),b notin (z)", {"a": "y", "b": "z"}, False),
        ("example.com/team=ml", {"example.com/team": "ml"}, True),
    ],
)
def test_label_selector_semantics(selector, labels, expected):
    assert LabelSelector.parse(selector).matches(labels) is expected


@pytest.mark.parametrize("bad", ["a in (x", "a=b,,c", "a=b c", "-a=b", "a in ()"])
def test_label_selector_rejects_garbage(bad):
    with pytest.raises(SelectorError):
        LabelSelector.parse(bad)
