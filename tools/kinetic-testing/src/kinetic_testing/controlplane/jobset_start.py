"""JobSet on the test control plane: its controller and its webhooks, on loopback.

The webhooks default and validate JobSets (without them a JobSet is never defaulted) and see
the pods of JobSets only, through the ``objectSelector`` upstream's kustomize patches add.
They fail closed, as upstream ships them, so they are registered only once the controller
answers.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from .jobset_build import JOBSET_BINARY, JOBSET_WEBHOOKS
from .pki import issue_serving_cert
from .registration import pod_selector, register_webhooks

if TYPE_CHECKING:
    from .cluster import ControlPlane

__all__ = ["JOBSET_NAME_LABEL", "start_jobset"]

JOBSET_NAME_LABEL = "jobset.sigs.k8s.io/jobset-name"
"""On every pod of a JobSet: what its pod webhooks select."""


def start_jobset(plane: ControlPlane, webhook_port: int, probe_port: int) -> None:
    run_dir = plane.run_dir
    certs = run_dir / "jobset-certs"
    certs.mkdir(exist_ok=True)
    issue_serving_cert(plane.pki, certs / "tls.crt", certs / "tls.key", hosts=("127.0.0.1",))
    config = run_dir / "jobset-config.json"  # JSON is YAML
    config.write_text(
        json.dumps(
            {
                "apiVersion": "config.jobset.x-k8s.io/v1alpha1",
                "kind": "Configuration",
                "leaderElection": {"leaderElect": False},
                "internalCertManagement": {"enable": False},
                "webhook": {"host": "127.0.0.1", "port": webhook_port, "certDir": str(certs)},
                "metrics": {"bindAddress": "0"},
                "health": {"healthProbeBindAddress": f"127.0.0.1:{probe_port}"},
            }
        )
    )
    plane.spawn(
        "jobset-controller",
        [
            str(plane.binaries.jobset / JOBSET_BINARY),
            f"--kubeconfig={plane.kubeconfig}",
            f"--config={config}",
        ],
    )
    plane.wait_http(
        "jobset-controller",
        f"http://127.0.0.1:{probe_port}/readyz",
        lambda body: body.startswith(b"ok"),
    )
    register_webhooks(
        plane, plane.binaries.jobset / JOBSET_WEBHOOKS, f"https://127.0.0.1:{webhook_port}",
        "jobset", _only_jobset_pods,
    )  # fmt: skip


def _only_jobset_pods(hook: dict[str, Any]) -> dict[str, Any]:
    if hook["name"] in ("mpod.kb.io", "vpod.kb.io"):
        hook["objectSelector"] = pod_selector(JOBSET_NAME_LABEL)
    return hook
