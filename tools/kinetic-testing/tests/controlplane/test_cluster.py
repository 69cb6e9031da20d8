"""The session's control plane: the pinned versions run, namespaces are ready for pods, and
the controllers and webhooks we depend on are serving."""

import json
import os
from pathlib import Path

from kinetic_testing.controlplane.cluster import GO_GC_PERCENT, ControlPlane
from kinetic_testing.controlplane.snapshot import namespace_snapshot
from kinetic_testing.controlplane.versions import PINS


def test_the_api_server_is_the_pinned_version(real_k8s: ControlPlane) -> None:
    assert real_k8s.request("GET", "/version")["gitVersion"] == PINS.kubernetes


def test_a_new_namespace_has_its_default_service_account(real_k8s: ControlPlane) -> None:
    name = real_k8s.create_namespace("fixture-check")
    try:
        account = real_k8s.request("GET", f"/api/v1/namespaces/{name}/serviceaccounts/default")
        assert account["metadata"]["name"] == "default"
    finally:
        real_k8s.delete_namespace(name)


def test_the_leaderworkerset_kind_and_its_webhooks_are_installed(real_k8s: ControlPlane) -> None:
    listing = real_k8s.request("GET", "/apis/leaderworkerset.x-k8s.io/v1/leaderworkersets")
    assert listing["kind"] == "LeaderWorkerSetList"
    hooks = real_k8s.request(
        "GET", "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/lws-mutating"
    )
    assert {hook["name"] for hook in hooks["webhooks"]} == {"mleaderworkerset.kb.io", "mpod.kb.io"}


def test_the_jobset_kind_and_its_webhooks_are_installed_its_pod_hooks_for_its_pods_only(
    real_k8s: ControlPlane,
) -> None:
    listing = real_k8s.request("GET", "/apis/jobset.x-k8s.io/v1alpha2/jobsets")
    assert listing["kind"] == "JobSetList"
    hooks = {}
    for kind in ("mutating", "validating"):
        path = f"/apis/admissionregistration.k8s.io/v1/{kind}webhookconfigurations/jobset-{kind}"
        hooks.update({hook["name"]: hook for hook in real_k8s.request("GET", path)["webhooks"]})
    assert set(hooks) == {"mjobset.kb.io", "mpod.kb.io", "vjobset.kb.io", "vpod.kb.io"}
    only_jobset_pods = {
        "matchExpressions": [{"key": "jobset.sigs.k8s.io/jobset-name", "operator": "Exists"}]
    }
    assert hooks["mpod.kb.io"]["objectSelector"] == only_jobset_pods
    assert hooks["vpod.kb.io"]["objectSelector"] == only_jobset_pods
    assert hooks["mjobset.kb.io"]["clientConfig"]["url"].startswith("https://127.0.0.1:")


def test_every_component_keeps_a_log_for_failure_reports(real_k8s: ControlPlane) -> None:
    assert set(real_k8s.logs) == {
        "etcd", "kube-apiserver", "kube-controller-manager", "lws-controller",
        "kueue-controller", "jobset-controller",
    }  # fmt: skip
    assert "--- kube-apiserver" in real_k8s.log_tails(lines=1)


def test_every_component_runs_with_the_suites_go_gc_percent(real_k8s: ControlPlane) -> None:
    expected = os.environ.get("GOGC", GO_GC_PERCENT).encode()
    for name, pid in real_k8s.process_ids.items():
        environment = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        assert b"GOGC=" + expected in environment, name


def test_a_failure_report_shows_the_jobs_and_pods_of_the_tests_namespace(
    real_k8s: ControlPlane, k8s_namespace: str
) -> None:
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "stuck"},
        "spec": {
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [{"name": "main", "image": "busybox", "command": ["true"]}],
                }
            }
        },
    }
    real_k8s.request("POST", f"/apis/batch/v1/namespaces/{k8s_namespace}/jobs", job)
    shown = namespace_snapshot(real_k8s, k8s_namespace).splitlines()
    assert shown[0] == f"namespace {k8s_namespace}:"
    assert "Jobs (1):" in shown
    assert any(line.startswith("  stuck: ") for line in shown), shown
    assert "LeaderWorkerSets (0):" in shown


def test_a_snapshot_of_a_cluster_that_cannot_be_read_says_why_instead_of_raising() -> None:
    class Unreachable:
        def request(self, method: str, path: str) -> object:
            raise ConnectionRefusedError("connection refused")

        def get_text(self, path: str) -> str:
            raise ConnectionRefusedError("connection refused")

    shown = namespace_snapshot(Unreachable(), "ns").splitlines()
    assert shown[1] == "Jobs: could not list (ConnectionRefusedError: connection refused)"
    assert len(shown) == 5


def test_a_deleted_namespaces_pods_are_gone_at_once_even_with_no_kubelet(
    real_k8s: ControlPlane,
) -> None:
    name = real_k8s.create_namespace("pods-outlive")
    pod = {
        "metadata": {"name": "bound"},
        "spec": {
            "nodeName": "a-node-no-agent-runs",  # so no kubelet ever confirms its end
            "containers": [{"name": "main", "image": "busybox"}],
        },
    }
    real_k8s.request("POST", f"/api/v1/namespaces/{name}/pods", pod)
    real_k8s.delete_namespace(name)
    assert real_k8s.request("GET", f"/api/v1/namespaces/{name}/pods")["items"] == []


def test_raw_calls_share_one_kept_open_connection(
    real_k8s: ControlPlane, tls_handshakes: list[str]
) -> None:
    name = real_k8s.create_namespace("one-connection")
    for _ in range(5):
        real_k8s.request("GET", f"/api/v1/namespaces/{name}")
    real_k8s.delete_namespace(name)
    assert len(tls_handshakes) <= 1, tls_handshakes


def test_the_admin_kubeconfig_presents_a_bearer_token_not_a_client_certificate(
    real_k8s: ControlPlane,
) -> None:
    """A token costs the API server a lookup; a client certificate, an ECDSA chain check on
    every request of every client the suite runs."""
    from kubernetes import client

    config = json.loads(real_k8s.kubeconfig.read_text())
    [user] = config["users"]
    assert set(user["user"]) == {"token"}
    api = real_k8s.api_client()
    try:
        review = client.AuthenticationV1Api(api).create_self_subject_review(
            {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}
        )
    finally:
        api.close()
    assert review.status.user_info.username == "kinetic-test-admin"
    assert "system:masters" in review.status.user_info.groups
