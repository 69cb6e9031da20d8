"""Kueue as one backend sees it: whether the cluster has it, the checks of ``queue=`` and
``priority=`` before anything is uploaded, and where queued workloads stand.

A status poll reads Kueue only for workloads that wait (suspended): one listing of their
Workloads, and per queue they wait in, its LocalQueue, its ClusterQueue and Kueue's visibility
API (pending workloads in order). A reader without the right to see cluster-scoped objects
still gets the queue and Kueue's own message, without the position or the quota.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from kinetic_gke.k8s import ClusterConnection, KubeApiError, NotFound, Obj
from kinetic_gke.k8s.kueue_api import GROUP, VERSION, served_version
from kinetic_gke.queueing.provisioning import (
    PROVISIONING_API,
    FlexRequest,
    flex_requests,
    waits_on_a_check,
)
from kinetic_protocol import ConfigError
from kinetic_protocol.queueing import DEFAULT_QUEUE, QueuePlace

__all__ = ["KueueView", "Queued"]

_VISIBILITY = f"/apis/visibility.{GROUP}/{VERSION}"
_NAMESPACED = f"/apis/{GROUP}/{VERSION}/namespaces/{{ns}}/{{plural}}"
_CLUSTER = f"/apis/{GROUP}/{VERSION}/{{plural}}"
_MAX_UIDS_IN_SELECTOR = 50


@dataclass(frozen=True)
class Queued:
    """What Kueue says of one workload: where it waits, and how often it was preempted."""

    workload: str
    """The Workload's name."""
    place: QueuePlace | None
    preemptions: int
    """Times Kueue evicted it for another workload (it re-queues it each time)."""
    evicted: str
    """Kueue's message of its latest eviction, while it is not admitted again."""
    flavor: str = ""
    """The ResourceFlavor Kueue admitted it on (its accelerators', where it asks for any);
    empty while it is not admitted."""
    request: FlexRequest | None = None
    """Its latest ProvisioningRequest (a flex-start job's); None where it has none."""


class KueueView:
    """Made for one connection, which it reaches only when first asked something."""

    def __init__(self, connect: Callable[[], ClusterConnection]) -> None:
        self._connect = connect
        self._served: bool | None = None

    @property
    def _connection(self) -> ClusterConnection:
        return self._connect()

    @property
    def served(self) -> bool:
        """Whether the cluster serves Kueue's API (read once)."""
        if self._served is None:
            self._served = served_version(self._connection) is not None
        return self._served

    # -- before a submission ---------------------------------------------------------------

    def resolve(self, queue: str | None, priority: str | None, cluster: str) -> str:
        """The LocalQueue jobs go to (``""`` on a cluster without Kueue); a ConfigError for a
        queue or priority class the cluster does not have, naming those it has."""
        if not self.served:
            if queue or priority:
                asked = ", ".join(
                    f"{name}={value!r}"
                    for name, value in (("queue", queue), ("priority", priority))
                    if value
                )
                raise ConfigError(
                    f"{asked} needs Kueue, and cluster {cluster!r} does not serve it, so its "
                    "jobs run unqueued. Run `kinetic up` to install Kueue and its queues, or "
                    "leave queue/priority unset (and KINETIC_QUEUE/KINETIC_PRIORITY)."
                )
            return ""
        name = queue or DEFAULT_QUEUE
        namespace = self._connection.namespace
        queues = self._names(_NAMESPACED.format(ns=namespace, plural="localqueues"))
        _require(
            name,
            queues,
            f"Queue {name!r} does not exist in namespace {namespace!r} of cluster {cluster!r} "
            "(queues there: {have}). Run `kinetic up` to make the queues your profile declares "
            "(the default one is 'kinetic'), or pass one of those.",
        )
        if priority:
            classes = self._names(_CLUSTER.format(plural="workloadpriorityclasses"))
            _require(
                priority,
                classes,
                f"Priority class {priority!r} does not exist on cluster {cluster!r} (classes "
                "there: {have}). Run `kinetic up` to make Kinetic's (low, normal, high), or pass "
                "one of those.",
            )
        return name

    def _names(self, path: str) -> set[str]:
        listing = self._get(f"listing {path.rsplit('/', 1)[-1]}", path) or {}
        return {item["metadata"]["name"] for item in listing.get("items") or []}

    # -- while a poll reads waiting workloads -----------------------------------------------

    def queued(self, owners: Iterable[Obj], kind: str) -> dict[str, Queued]:
        """What Kueue says of each of ``owners`` (objects of ``kind``: Jobs, JobSets,
        LeaderWorkerSets), by uid."""
        listed = list(owners)
        if not listed:
            return {}
        workloads = self._workloads(listed, kind)
        places = self._places([w for w in workloads.values() if not _condition(w, "QuotaReserved")])
        requests = self._flex_requests([w for w in workloads.values() if waits_on_a_check(w)])
        return {
            uid: Queued(
                workload["metadata"]["name"],
                places.get(workload["metadata"]["name"]),
                _preemptions(workload),
                _eviction(workload),
                _admitted_flavor(workload),
                requests.get(workload["metadata"]["name"]),
            )
            for uid, workload in workloads.items()
        }

    def _flex_requests(self, checked: list[Obj]) -> dict[str, FlexRequest]:
        """The ProvisioningRequests of the namespace, by Workload (one listing, made only when
        some workload has an admission check)."""
        if not checked:
            return {}
        path = f"{PROVISIONING_API}/namespaces/{self._connection.namespace}/provisioningrequests"
        listing = self._get_quietly("listing provisioning requests", path) or {}
        return flex_requests(listing.get("items") or [])

    def deactivate(self, workload: str) -> None:
        """Keep Kueue from admitting ``workload`` again (``spec.active: false``)."""
        connection = self._connection
        connection.send(
            f"deactivating Kueue workload {workload}",
            connection.custom.patch_namespaced_custom_object,
            *(GROUP, VERSION, connection.namespace, "workloads", workload),
            {"spec": {"active": False}},
        )

    def _workloads(self, owners: list[Obj], kind: str) -> dict[str, Obj]:
        """The Workload of each owner, by the owner's uid (one listing). Kueue labels a Job's
        Workload with the Job's uid, so a few Jobs' are listed by that label."""
        uids = {owner["metadata"]["uid"] for owner in owners}
        path = _NAMESPACED.format(ns=self._connection.namespace, plural="workloads")
        if kind == "Job" and len(uids) <= _MAX_UIDS_IN_SELECTOR:
            path += f"?labelSelector={GROUP}/job-uid+in+({','.join(sorted(uids))})"
        listing = self._get("listing Kueue workloads", path) or {}
        found: dict[str, Obj] = {}
        for workload in listing.get("items") or []:
            for owner in workload["metadata"].get("ownerReferences") or []:
                if owner.get("uid") in uids:
                    found[owner["uid"]] = workload
        return found

    def _places(self, waiting: list[Obj]) -> dict[str, QueuePlace]:
        places: dict[str, QueuePlace] = {}
        by_queue: dict[str, list[Obj]] = {}
        for workload in waiting:
            by_queue.setdefault(workload["spec"].get("queueName", ""), []).append(workload)
        for queue, workloads in by_queue.items():
            local = self.read_local_queue(queue)
            cluster_queue = str((local or {}).get("spec", {}).get("clusterQueue") or "")
            cq = self.read_cluster_queue(cluster_queue) if cluster_queue else None
            positions = self._positions(queue)
            waiting_count = (cq or {}).get("status", {}).get("pendingWorkloads")
            for workload in workloads:
                requested = _requested(workload)
                position = positions.get(workload["metadata"]["name"])
                places[workload["metadata"]["name"]] = QueuePlace(
                    queue=queue,
                    cluster_queue=cluster_queue,
                    position=None if position is None else position + 1,
                    waiting=_waiting(waiting_count, position),
                    priority=_priority_class(workload),
                    requested=requested,
                    quota=_quota(cq, requested) if cq else {},
                    in_use=_in_use(cq, requested) if cq else {},
                    reason=_pending_message(workload),
                )
        return places

    def read_local_queue(self, name: str) -> Obj | None:
        """The LocalQueue ``name`` of the namespace; None where it cannot be read."""
        path = _NAMESPACED.format(ns=self._connection.namespace, plural="localqueues")
        return self._get_quietly(f"reading LocalQueue {name}", f"{path}/{name}")

    def read_cluster_queue(self, name: str) -> Obj | None:
        """The ClusterQueue ``name``; None where it cannot be read."""
        path = _CLUSTER.format(plural="clusterqueues")
        return self._get_quietly(f"reading ClusterQueue {name}", f"{path}/{name}")

    def read_flavor(self, name: str) -> Obj | None:
        """The ResourceFlavor ``name``; None where it cannot be read."""
        path = _CLUSTER.format(plural="resourceflavors")
        return self._get_quietly(f"reading ResourceFlavor {name}", f"{path}/{name}")

    def _positions(self, queue: str) -> dict[str, int]:
        """0-based place in the cluster queue of each workload waiting in ``queue``."""
        path = (
            f"{_VISIBILITY}/namespaces/{self._connection.namespace}/localqueues/{queue}"
            "/pendingworkloads"
        )
        answer = self._get_quietly(f"reading the pending workloads of queue {queue}", path)
        return {
            item["metadata"]["name"]: int(item.get("positionInClusterQueue", 0))
            for item in (answer or {}).get("items") or []
        }

    def _get_quietly(self, doing: str, path: str) -> Obj | None:
        """A read whose absence (not found, not allowed, not served) leaves a detail out."""
        try:
            return self._get(doing, path)
        except KubeApiError:
            return None

    def _get(self, doing: str, path: str) -> Obj | None:
        api = self._connection.api_client

        def fetch() -> Any:
            method, url, headers, _, _ = api.param_serialize(
                "GET",
                path,
                header_params={"Accept": "application/json"},
                auth_settings=["BearerToken"],
            )
            response = api.call_api(method, url, header_params=headers)
            response.read()
            return api.response_deserialize(response, {"200": "object"}).data

        try:
            answer = self._connection.call(doing, fetch)
        except NotFound:
            return None
        return dict(answer) if isinstance(answer, dict) else None


def _require(name: str, have: set[str], refusal: str) -> None:
    """A ConfigError saying ``refusal`` (its ``{have}`` the names there) unless ``name`` is
    one of ``have``."""
    if name not in have:
        raise ConfigError(refusal.format(have=", ".join(sorted(have)) or "none"))


def _waiting(count: object, position: int | None) -> int | None:
    """How many wait in the cluster queue, this one included (its status may lag behind the
    visibility API's list by a moment)."""
    if count is None:
        return None
    return max(int(str(count)), 0 if position is None else position + 1)


def _condition(obj: Obj, kind: str, status: str = "True") -> Obj | None:
    for condition in obj.get("status", {}).get("conditions") or []:
        if condition.get("type") == kind and condition.get("status") == status:
            return dict(condition)
    return None


def _preemptions(workload: Obj) -> int:
    evictions = (workload.get("status", {}).get("schedulingStats") or {}).get("evictions") or []
    return sum(int(e.get("count") or 0) for e in evictions if e.get("reason") == "Preempted")


def _eviction(workload: Obj) -> str:
    evicted = _condition(workload, "Evicted")
    if evicted is None or _condition(workload, "Admitted"):
        return ""
    return str(evicted.get("message") or evicted.get("reason") or "evicted")


def _admitted_flavor(workload: Obj) -> str:
    admission = workload.get("status", {}).get("admission") or {}
    for assignment in admission.get("podSetAssignments") or []:
        flavors = assignment.get("flavors") or {}
        accelerators = [name for resource, name in flavors.items() if "/" in resource]
        chosen = accelerators or list(flavors.values())
        if chosen:
            return str(chosen[0])
    return ""


def _priority_class(workload: Obj) -> str:
    return str((workload["spec"].get("priorityClassRef") or {}).get("name") or "")


def _pending_message(workload: Obj) -> str:
    pending = _condition(workload, "QuotaReserved", "False") or {}
    return str(pending.get("message") or "")


def _requested(workload: Obj) -> dict[str, str]:
    """What the workload asks for, all its pods together, by resource: its accelerators when it
    asks for any, else everything. Read from its pod sets, which are there from the start
    (Kueue's own sums appear only once it has weighed the workload)."""
    totals: dict[str, Decimal] = {}
    for pod_set in workload["spec"].get("podSets") or []:
        count = int(pod_set.get("count") or 1)
        pod = (pod_set.get("template") or {}).get("spec") or {}
        for container in pod.get("containers") or []:
            requests = (container.get("resources") or {}).get("requests") or {}
            for resource, amount in requests.items():
                totals[resource] = totals.get(resource, Decimal(0)) + count * _quantity(amount)
    accelerators = {k: v for k, v in totals.items() if "/" in k}
    return {name: _shown(name, total) for name, total in (accelerators or totals).items()}


def _quota(cluster_queue: Obj, resources: dict[str, str]) -> dict[str, str]:
    amounts = [
        (resource["name"], resource.get("nominalQuota"))
        for group in cluster_queue.get("spec", {}).get("resourceGroups") or []
        for flavor in group.get("flavors") or []
        for resource in flavor.get("resources") or []
    ]
    return _summed(amounts, resources)


def _in_use(cluster_queue: Obj, resources: dict[str, str]) -> dict[str, str]:
    amounts = [
        (resource["name"], resource.get("total"))
        for flavor in cluster_queue.get("status", {}).get("flavorsUsage") or []
        for resource in flavor.get("resources") or []
    ]
    return _summed(amounts, resources)


def _summed(amounts: list[tuple[str, object]], wanted: dict[str, str]) -> dict[str, str]:
    totals: dict[str, Decimal] = {}
    for name, amount in amounts:
        if name in wanted:
            totals[name] = totals.get(name, Decimal(0)) + _quantity(amount)
    return {name: _shown(name, total) for name, total in totals.items()}


def _quantity(amount: object) -> Decimal:
    from kubernetes.utils import parse_quantity

    try:
        return Decimal(parse_quantity(str(amount or "0")))  # type: ignore[no-untyped-call]
    except ValueError:
        return Decimal(0)


def _shown(resource: str, amount: Decimal) -> str:
    """``16``, ``2.5`` (CPUs), ``64Gi`` (memory), in plain digits whatever the size."""
    if resource == "memory" or resource.endswith("-storage"):
        return f"{_plain(amount / (1 << 30))}Gi"
    return _plain(amount)


def _plain(amount: Decimal) -> str:
    rounded = amount.quantize(Decimal("0.01")).normalize()
    return f"{rounded:f}"
