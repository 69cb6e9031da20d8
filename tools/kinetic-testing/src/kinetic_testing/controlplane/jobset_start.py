"""JobSet on the test control plane: its controller and its webhooks, on loopback.

The webhooks default and validate JobSets (without them a JobSet is never defaulted) and see
the pods of JobSets only, through the ``objectSelector`` upstream's kustomize patches add.
They fail closed, as upstream ships them, so they are registered only once the controller
answers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .jobset_build import JOBSET_BINARY, JOBSET_WEBHOOKS
from .registration import pod_selector, register_webhooks, start_manager

if TYPE_CHECKING:
    from .cluster import ControlPlane

__all__ = ["JOBSET_NAME_LABEL", "start_jobset"]

JOBSET_NAME_LABEL = "jobset.sigs.k8s.io/jobset-name"
"""On every pod of a JobSet: what its pod webhooks select."""


def start_jobset(plane: ControlPlane, webhook_port: int, probe_port: int) -> None:
    binary = plane.binaries.jobset / JOBSET_BINARY
    jobset_api = "config.jobset.x-k8s.io/v1alpha1"
    start_manager(plane, "jobset-controller", binary, jobset_api, webhook_port, probe_port)
    register_webhooks(
        plane, plane.binaries.jobset / JOBSET_WEBHOOKS, f"https://127.0.0.1:{webhook_port}",
        "jobset", _only_jobset_pods,
    )  # fmt: skip


def _only_jobset_pods(hook: dict[str, Any]) -> dict[str, Any]:
    if hook["name"] in ("mpod.kb.io", "vpod.kb.io"):
        hook["objectSelector"] = pod_selector(JOBSET_NAME_LABEL)
    return hook
