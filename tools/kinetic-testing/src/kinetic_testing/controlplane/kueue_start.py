"""Kueue on the test control plane: its CRDs, its controller, its webhooks and its visibility API.

Everything listens on loopback, as the LWS controller does. The webhooks are registered by URL
with the plane's CA; the visibility API is reached through the API server's aggregation layer,
which needs a front-proxy CA of its own and an ``ExternalName`` Service pointing at localhost
(an APIService can only name a Service, and Endpoints cannot hold a loopback address).

Only the webhooks of what Kinetic runs are registered (Jobs, JobSets, LeaderWorkerSets and
Kueue's own kinds); the pod hooks see only LeaderWorkerSet pods. Kueue's webhooks fail closed,
so each one registered is a call on the path of every matching create in every test.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .kueue_build import CRDS, KUEUE_BINARY, WEBHOOKS
from .pki import issue_serving_cert, make_pki
from .registration import pod_selector, register_webhooks

if TYPE_CHECKING:
    from .cluster import ControlPlane

__all__ = ["KUEUE_NAMESPACE", "front_proxy_flags", "kueue_crds", "start_kueue"]

KUEUE_NAMESPACE = "kueue-system"
_FRAMEWORKS = ["batch/job", "jobset.x-k8s.io/jobset", "leaderworkerset.x-k8s.io/leaderworkerset"]
_HOOKS = {
    "clusterqueue",
    "cohort",
    "resourceflavor",
    "workload",
    "job",
    "jobset",
    "leaderworkerset",
    "pod",
}
"""Kinds whose webhooks are registered (``m<kind>.kb.io``, ``v<kind>.kb.io``)."""
_LWS_POD = pod_selector("leaderworkerset.sigs.k8s.io/name")


def front_proxy_flags(run_dir: Path) -> list[str]:
    """kube-apiserver's flags for its aggregation layer, with a CA of their own (one shared
    with client certificates makes the API server exit)."""
    proxy = make_pki(run_dir / "front-proxy")
    return [
        f"--requestheader-client-ca-file={proxy.ca_cert}",
        "--requestheader-username-headers=X-Remote-User",
        "--requestheader-group-headers=X-Remote-Group",
        "--requestheader-extra-headers-prefix=X-Remote-Extra-",
        f"--proxy-client-cert-file={proxy.admin_cert}",
        f"--proxy-client-key-file={proxy.admin_key}",
    ]


def kueue_crds(plane: ControlPlane) -> list[Path]:
    """Kueue's CRDs, with the ProvisioningRequest CRD its admission check needs (which must be
    served before Kueue starts: it looks for that API once)."""
    return sorted((plane.binaries.kueue / CRDS).glob("*.yaml"))


def start_kueue(plane: ControlPlane, webhook_port: int, probe_port: int, view_port: int) -> None:
    run_dir = plane.run_dir
    certs = run_dir / "kueue-certs"
    certs.mkdir(exist_ok=True)
    issue_serving_cert(
        plane.pki, certs / "tls.crt", certs / "tls.key", hosts=("127.0.0.1", "localhost")
    )
    plane.post_or_get("/api/v1/namespaces", {"metadata": {"name": KUEUE_NAMESPACE}})
    config = run_dir / "kueue-config.json"  # JSON is YAML
    config.write_text(
        json.dumps(
            {
                "apiVersion": "config.kueue.x-k8s.io/v1beta2",
                "kind": "Configuration",
                "namespace": KUEUE_NAMESPACE,
                "leaderElection": {"leaderElect": False},
                "internalCertManagement": {"enable": False},
                "webhook": {"host": "127.0.0.1", "port": webhook_port, "certDir": str(certs)},
                "metrics": {"bindAddress": "0"},
                "health": {"healthProbeBindAddress": f"127.0.0.1:{probe_port}"},
                "visibilityServer": {"bindAddress": "127.0.0.1", "bindPort": view_port},
                "clientConnection": {"qps": 200, "burst": 400},
                "integrations": {"frameworks": _FRAMEWORKS},
            }
        )
    )
    plane.spawn(
        "kueue-controller",
        [
            str(plane.binaries.kueue / KUEUE_BINARY),
            f"--kubeconfig={plane.kubeconfig}",
            f"--config={config}",
            f"--visibility-server-port={view_port}",
        ],
        env={"KUEUE_METRICS_CERT_DIR": str(certs), "KUEUE_VISIBILITY_CERT_DIR": str(certs)},
    )
    plane.wait_http(
        "kueue-controller",
        f"http://127.0.0.1:{probe_port}/readyz",
        lambda body: body.startswith(b"ok"),
    )
    register_webhooks(
        plane, plane.binaries.kueue / WEBHOOKS, f"https://127.0.0.1:{webhook_port}", "kueue",
        _kinetic_hooks,
    )  # fmt: skip
    _register_visibility(plane, view_port)


def _kinetic_hooks(hook: dict[str, Any]) -> dict[str, Any] | None:
    kind = hook["name"].removesuffix(".kb.io")[1:]
    if kind not in _HOOKS:
        return None
    if kind == "pod":
        hook["objectSelector"] = _LWS_POD
    return hook


def _register_visibility(plane: ControlPlane, port: int) -> None:
    service = "kueue-visibility-server"
    plane.post_or_get(
        f"/api/v1/namespaces/{KUEUE_NAMESPACE}/services",
        {
            "metadata": {"name": service, "namespace": KUEUE_NAMESPACE},
            "spec": {
                "type": "ExternalName",
                "externalName": "localhost",
                "ports": [{"name": "https", "port": port, "protocol": "TCP"}],
            },
        },
    )
    api_service: dict[str, Any] = {
        "apiVersion": "apiregistration.k8s.io/v1",
        "kind": "APIService",
        "metadata": {"name": "v1beta2.visibility.kueue.x-k8s.io"},
        "spec": {
            "group": "visibility.kueue.x-k8s.io",
            "version": "v1beta2",
            "groupPriorityMinimum": 100,
            "versionPriority": 100,
            "insecureSkipTLSVerify": True,
            "service": {"name": service, "namespace": KUEUE_NAMESPACE, "port": port},
        },
    }
    path = "/apis/apiregistration.k8s.io/v1/apiservices"
    plane.post_or_get(path, api_service)

    def available() -> bool:
        answer = plane.request("GET", f"{path}/{api_service['metadata']['name']}")
        conditions = (answer.get("status") or {}).get("conditions") or []
        return any(c["type"] == "Available" and c["status"] == "True" for c in conditions)

    plane.wait("Kueue's visibility API to be available", available, component="kueue-controller")
