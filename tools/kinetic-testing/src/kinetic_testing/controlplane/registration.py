"""The plane's add-on controllers: how the controller-runtime ones start, and what they
register with the API server (their CRDs and webhooks).

CRDs are posted together and only then awaited: the API server establishes them side by side,
so the plane waits about as long as for the slowest one (Kueue's workloads, JobSet's jobsets:
1.5 to 3 s each) instead of their sum. Webhooks are registered by URL on loopback with the
plane's CA, not through a Service: the controllers run on this machine.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .cluster import ControlPlane

__all__ = ["install_crds", "pod_selector", "register_webhooks", "start_manager"]

_CRD_PATH = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


def start_manager(
    plane: ControlPlane,
    name: str,
    binary: Path,
    config_api: str,
    webhook_port: int,
    probe_port: int,
) -> None:
    """Start a controller-runtime manager (LWS's, JobSet's) on loopback, with a serving
    certificate of the plane's CA, no leader election and no metrics, and wait until it is
    ready; ``config_api`` is its ``Configuration``'s apiVersion."""
    from .pki import issue_serving_cert

    certs = plane.run_dir / f"{name}-certs"
    certs.mkdir(exist_ok=True)
    issue_serving_cert(plane.pki, certs / "tls.crt", certs / "tls.key", hosts=("127.0.0.1",))
    config = plane.run_dir / f"{name}-config.json"  # JSON is YAML
    config.write_text(
        json.dumps(
            {
                "apiVersion": config_api,
                "kind": "Configuration",
                "leaderElection": {"leaderElect": False},
                "internalCertManagement": {"enable": False},
                "webhook": {"host": "127.0.0.1", "port": webhook_port, "certDir": str(certs)},
                "metrics": {"bindAddress": "0"},
                "health": {"healthProbeBindAddress": f"127.0.0.1:{probe_port}"},
            }
        )
    )
    plane.spawn(name, [str(binary), f"--kubeconfig={plane.kubeconfig}", f"--config={config}"])
    plane.wait_http(
        name, f"http://127.0.0.1:{probe_port}/readyz", lambda body: body.startswith(b"ok")
    )


def install_crds(plane: ControlPlane, manifests: Iterable[Path]) -> None:
    """Post every CRD (one that exists is kept), then wait until each is served."""
    served = []
    for crd in manifests:
        answer = plane.post_or_get(_CRD_PATH, crd.read_bytes(), content_type="application/yaml")
        spec = answer["spec"]
        version = next(v["name"] for v in spec["versions"] if v.get("storage"))
        served.append(f"/apis/{spec['group']}/{version}/{spec['names']['plural']}")
    for path in served:
        plane.wait_until_served(path)


def pod_selector(label: str) -> dict[str, Any]:
    """The ``objectSelector`` that limits a controller's pod hooks to its own pods (what each
    project's kustomize patches add to the generated manifest)."""
    return {"matchExpressions": [{"key": label, "operator": "Exists"}]}


def register_webhooks(
    plane: ControlPlane,
    manifest: Path,
    base_url: str,
    owner: str,
    adjust: Callable[[dict[str, Any]], dict[str, Any] | None],
) -> None:
    """Register the hooks of a controller-gen webhook ``manifest`` as configurations named
    ``<owner>-mutating`` and ``<owner>-validating``, served at ``base_url``. ``adjust`` gets
    each hook (its ``clientConfig`` already by URL) and returns it changed, or None to leave
    it out."""
    import yaml  # type: ignore[import-untyped]  # a dependency of the kubernetes client

    ca_bundle = base64.b64encode(plane.pki.ca_cert.read_bytes()).decode()
    for document in yaml.safe_load_all(manifest.read_text()):
        if not document:
            continue
        hooks = []
        for hook in document["webhooks"]:
            path = hook["clientConfig"]["service"]["path"]
            hook["clientConfig"] = {"url": base_url + path, "caBundle": ca_bundle}
            kept = adjust(hook)
            if kept is not None:
                hooks.append(kept)
        kind = document["kind"]
        prefix = kind.removesuffix("WebhookConfiguration").lower()
        plane.request(
            "POST",
            f"/apis/admissionregistration.k8s.io/v1/{prefix}webhookconfigurations",
            {
                "apiVersion": "admissionregistration.k8s.io/v1",
                "kind": kind,
                "metadata": {"name": f"{owner}-{prefix}"},
                "webhooks": hooks,
            },
        )
