"""What ``kinetic status`` and ``kinetic doctor`` say of Kueue: whether the cluster serves it
(and so queues Kinetic's jobs), whether its controller runs, and each queue of the namespace
with its jobs admitted and pending and its quota in use, read from the queues' own status."""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from kinetic_gke.k8s import ClusterConnection
from kinetic_gke.k8s.kueue_api import GROUP, VERSION, served_version
from kinetic_gke.provision.kueue_queues import CONTROLLER, PLURALS, controller_state
from kinetic_gke.provision.quantities import shown, totals

__all__ = ["KueueState", "QueueUsage", "read_kueue"]


@dataclass(frozen=True)
class QueueUsage:
    """One LocalQueue of the namespace and the ClusterQueue behind it."""

    name: str
    cluster_queue: str
    pending: int
    admitted: int
    in_use: dict[str, str] = field(default_factory=dict)
    """What the cluster queue's admitted jobs hold now, by resource."""
    quota: dict[str, str] = field(default_factory=dict)
    """The cluster queue's nominal quota, by resource (all its flavors)."""
    inactive: str = ""
    """Why Kueue does not admit through it (its ``Active`` condition), if it does not."""

    def describe(self) -> str:
        """``team-a (cluster queue team-a): 2 admitted, 3 pending; nvidia.com/gpu 8 of 16``."""
        text = f"{self.name} (cluster queue {self.cluster_queue}): {self.admitted} admitted, "
        text += f"{self.pending} pending"
        held = [
            f"{resource} {self.in_use.get(resource, '0')} of {quota}"
            for resource, quota in self.quota.items()
            if quota != "0"
        ]
        text += f"; {', '.join(held)}" if held else ""
        return text + (f" (inactive: {self.inactive})" if self.inactive else "")

    def document(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass(frozen=True)
class KueueState:
    api: str | None
    """The Kueue API version served; None: no Kueue, jobs run unqueued."""
    release: str = ""
    """The controller image's tag (``v0.17.0``) where its Deployment is readable."""
    controller: tuple[int, int] | None = None
    """Its Deployment's available and wanted replicas; None where it has none."""
    queues: list[QueueUsage] = field(default_factory=list)

    def document(self) -> dict[str, Any]:
        return {
            "api": self.api,
            "release": self.release,
            "controller": list(self.controller) if self.controller else None,
            "queues": [queue.document() for queue in self.queues],
        }


def _release(connection: ClusterConnection) -> str:
    from kubernetes import client

    namespace, name = CONTROLLER
    apps = client.AppsV1Api(connection.api_client)
    deployment = connection.read_or_none(
        f"reading Deployment {namespace}/{name}", apps.read_namespaced_deployment, name, namespace
    )
    containers = ((deployment or {}).get("spec", {}).get("template", {}).get("spec") or {}).get(
        "containers"
    ) or [{}]
    image = str(containers[0].get("image", ""))
    return image.rpartition(":")[2] if ":" in image else ""


def _usage(local: dict[str, Any], cluster_queue: dict[str, Any] | None) -> QueueUsage:
    status = local.get("status") or {}
    inactive = next(
        (
            f"{c.get('reason', '')}: {c.get('message', '')}".strip(": ")
            for c in status.get("conditions") or []
            if c.get("type") == "Active" and c.get("status") != "True"
        ),
        "",
    )
    name = (local.get("spec") or {}).get("clusterQueue", "")
    quota: dict[str, Fraction] = {}
    used: dict[str, Fraction] = {}
    if cluster_queue is not None:
        for group in (cluster_queue.get("spec") or {}).get("resourceGroups") or []:
            for resource, amount in totals(group.get("flavors") or [], "nominalQuota").items():
                quota[resource] = quota.get(resource, Fraction(0)) + amount
        used = totals((cluster_queue.get("status") or {}).get("flavorsUsage") or [], "total")
    return QueueUsage(
        name=local["metadata"]["name"],
        cluster_queue=name,
        pending=int(status.get("pendingWorkloads") or 0),
        admitted=int(status.get("admittedWorkloads") or 0),
        in_use={r: shown(r, used.get(r, Fraction(0))) for r in quota},
        quota={r: shown(r, amount) for r, amount in quota.items()},
        inactive=inactive,
    )


def read_kueue(connection: ClusterConnection, namespace: str) -> KueueState:
    """Kueue as the cluster has it, with the namespace's queues."""
    api = served_version(connection)
    if api is None:
        return KueueState(None)
    custom = connection.custom
    locals_ = connection.read(
        f"listing LocalQueues in {namespace}", custom.list_namespaced_custom_object,
        GROUP, VERSION, namespace, PLURALS["LocalQueue"],
    )  # fmt: skip
    cluster_queues = connection.read(
        "listing ClusterQueues", custom.list_cluster_custom_object,
        GROUP, VERSION, PLURALS["ClusterQueue"],
    )  # fmt: skip
    by_name = {cq["metadata"]["name"]: cq for cq in cluster_queues.get("items") or []}
    queues = [
        _usage(local, by_name.get((local.get("spec") or {}).get("clusterQueue", "")))
        for local in sorted(locals_.get("items") or [], key=lambda q: q["metadata"]["name"])
    ]
    return KueueState(api, _release(connection), controller_state(connection), queues)
