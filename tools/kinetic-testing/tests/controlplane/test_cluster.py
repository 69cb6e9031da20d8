"""The session's control plane: the pinned versions run, namespaces are ready for pods, and
the controllers and webhooks we depend on are serving."""

from kinetic_testing.controlplane.cluster import ControlPlane
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


def test_every_component_keeps_a_log_for_failure_reports(real_k8s: ControlPlane) -> None:
    assert set(real_k8s.logs) == {
        "etcd", "kube-apiserver", "kube-controller-manager", "lws-controller",
    }  # fmt: skip
    assert "--- kube-apiserver" in real_k8s.log_tails(lines=1)
