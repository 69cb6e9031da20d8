"""Server-side defaulting: the fields a real API server fills in on create.

Code under test often reads these back (a Job's `backoffLimit`, its generated selector), so a
simulator that left them empty would hide bugs that only show up on a real cluster.
"""

from __future__ import annotations

from typing import Any

from . import podstatus
from .resources import JOBS, PODS, ResourceType

__all__ = ["apply_defaults", "job_labels"]


def job_labels(name: str, uid: str) -> dict[str, str]:
    """The labels the Job controller stamps on its pod template (and so on its pods)."""
    return {
        "batch.kubernetes.io/controller-uid": uid,
        "batch.kubernetes.io/job-name": name,
        "controller-uid": uid,
        "job-name": name,
    }


def _image_pull_policy(image: str) -> str:
    last = image.rsplit("/", 1)[-1]
    if "@" in last:
        return "IfNotPresent"
    tag = last.partition(":")[2]
    return "Always" if tag in ("", "latest") else "IfNotPresent"


def _pod_spec(spec: dict[str, Any], *, bare_pod: bool) -> None:
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("schedulerName", "default-scheduler")
    spec.setdefault("securityContext", {})
    spec.setdefault("terminationGracePeriodSeconds", 30)
    for container in [*spec.get("initContainers", []), *spec.get("containers", [])]:
        container.setdefault("imagePullPolicy", _image_pull_policy(str(container.get("image"))))
        container.setdefault("resources", {})
        container.setdefault("terminationMessagePath", "/dev/termination-log")
        container.setdefault("terminationMessagePolicy", "File")
    if bare_pod:
        # Admission plugins (ServiceAccount, DefaultTolerationSeconds, Priority) add these.
        spec.setdefault("serviceAccountName", "default")
        spec.setdefault("serviceAccount", spec["serviceAccountName"])
        spec.setdefault("enableServiceLinks", True)
        spec.setdefault("preemptionPolicy", "PreemptLowerPriority")
        spec.setdefault("priority", 0)
        spec.setdefault(
            "tolerations",
            [
                {
                    "key": f"node.kubernetes.io/{taint}",
                    "operator": "Exists",
                    "effect": "NoExecute",
                    "tolerationSeconds": 300,
                }
                for taint in ("not-ready", "unreachable")
            ],
        )


def apply_defaults(res: ResourceType, obj: dict[str, Any]) -> None:
    """Fill defaults in place; called once the object has its uid, before it is stored."""
    meta = obj["metadata"]
    if res is PODS:
        _pod_spec(obj.setdefault("spec", {}), bare_pod=True)
        obj["status"] = podstatus.initial_status(obj)
    elif res is JOBS:
        spec = obj.setdefault("spec", {})
        for key, value in (
            ("backoffLimit", 6),
            ("completions", 1),
            ("parallelism", 1),
            ("completionMode", "NonIndexed"),
            ("suspend", False),
            ("manualSelector", None),
            ("podReplacementPolicy", "TerminatingOrFailed"),
        ):
            if value is not None:
                spec.setdefault(key, value)
        labels = job_labels(meta["name"], meta["uid"])
        spec["selector"] = {"matchLabels": {"batch.kubernetes.io/controller-uid": meta["uid"]}}
        template = spec.setdefault("template", {})
        template.setdefault("metadata", {})
        template["metadata"]["labels"] = {**(template["metadata"].get("labels") or {}), **labels}
        _pod_spec(template.setdefault("spec", {}), bare_pod=False)
        obj["status"] = {}
    else:
        obj.pop("status", None)
