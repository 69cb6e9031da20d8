"""The Kueue objects a cluster's node pools and declared queues call for, as data.

- A **ResourceFlavor** per accelerator pool: the node labels a job's pods select that pool's
  hardware by (the GKE labels :func:`kinetic_gke.scheduling.scheduling_for` puts in their node
  selector, and the pool's own name), and the pool's taints as ``nodeTaints`` (GKE's GPU or TPU
  taint, Kinetic's spot and reservation taints), so that Kueue gives a job only a flavor whose
  nodes it can run on: a CPU job never takes a GPU pool's quota, an on-demand job never a spot
  pool's or a reservation's. Two flavors for CPU work, spot and on-demand. A ClusterQueue lists
  them in one order of preference, the order Kueue tries them in for a job that may take
  several (``accelerator=[...]``, ``capacity=[...]``). The taints are not also written as the
  flavor's ``tolerations``: Kueue counts those as tolerated when it matches a job to a flavor.
- A **ClusterQueue** per queue, all in the cohort ``kinetic``: one resource group covering CPU,
  memory and the accelerators the pools have, each flavor's nominal quota the queue's share of
  the flavor's capacity (nodes, at the most the autoscaler may add, times what one node has).
  Jobs wait in creation order (``BestEffortFIFO``), a higher priority may preempt a lower one
  in the same queue, and a queue may take back its lent quota from any borrower.
- For flex-start pools (GKE's queued provisioning), a **ProvisioningRequestConfig** of GKE's
  class ``queued-provisioning.gke.io`` and the **AdmissionCheck** that uses it; each
  ClusterQueue applies that check to the flex-start flavors only (``admissionChecksStrategy``),
  so Kueue reserves the quota, asks GKE for the nodes through a ProvisioningRequest, and admits
  the job once they are provisioned. A failed request is not retried: its job fails with
  GKE's message instead of waiting out Kueue's backoff.
- A **LocalQueue** per queue in the jobs' namespace, and the **WorkloadPriorityClasses** of
  :data:`kinetic_protocol.queueing.DEFAULT_PRIORITY_CLASSES`.

CPU capacity is GKE's auto-provisioning limit where it is on (the cluster grows CPU pools to
it), else the CPU pools' own. Quotas are upper bounds Kueue admits against, not reservations.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from kinetic_gke.k8s.kueue_api import GROUP, VERSION
from kinetic_gke.machines import MachineShape, machine_shape
from kinetic_gke.pools import SPOT_TAINT, Autoprovisioning, PoolInfo, pool_accelerator
from kinetic_gke.provision.queue_shares import QueueShares
from kinetic_gke.scheduling import (
    FLEX_START_LABEL,
    GPU_RESOURCE,
    RESERVATION_LABEL,
    TPU_RESOURCE,
    scheduling_for,
)
from kinetic_protocol import parse_accelerator
from kinetic_protocol.accelerators import valid_accelerator_names
from kinetic_protocol.queueing import DEFAULT_PRIORITY_CLASSES

__all__ = [
    "API_VERSION",
    "COHORT",
    "CPU_FLAVOR",
    "CPU_SPOT_FLAVOR",
    "FLEX_START_CHECK",
    "KINDS",
    "PROVISIONING_CLASS",
    "SHARE_ANNOTATION",
    "Flavor",
    "flavors",
    "kueue_objects",
]

API_VERSION = f"{GROUP}/{VERSION}"
COHORT = "kinetic"
CPU_FLAVOR = "kinetic-cpu"
CPU_SPOT_FLAVOR = "kinetic-cpu-spot"
SHARE_ANNOTATION = "kinetic.dev/queue-share"
"""On each ClusterQueue: its share, so ``pool add`` and a later ``up`` keep the split."""
NODEPOOL_LABEL = "cloud.google.com/gke-nodepool"
FLEX_START_CHECK = "kinetic-flex-start"
"""The AdmissionCheck of flex-start flavors, and the ProvisioningRequestConfig it names."""
PROVISIONING_CLASS = "queued-provisioning.gke.io"
PROVISIONING_CONTROLLER = f"{GROUP}/provisioning-request"
KINDS = (
    "ResourceFlavor",
    "WorkloadPriorityClass",
    "ProvisioningRequestConfig",
    "AdmissionCheck",
    "ClusterQueue",
    "LocalQueue",
)
"""In the order they are applied (each refers only to kinds before it)."""
_ACCELERATOR_TAINTS = {GPU_RESOURCE: "present", TPU_RESOURCE: "present"}
"""The taint GKE puts on every GPU or TPU node (key, value; effect NoSchedule)."""
_ORDER = ("cpu", "memory", GPU_RESOURCE, TPU_RESOURCE)


@dataclass(frozen=True)
class Flavor:
    """One ResourceFlavor and what its nodes hold in all (cpu in millicores, memory in MiB,
    accelerators in chips or GPUs)."""

    name: str
    node_labels: dict[str, str] = field(default_factory=dict)
    taints: tuple[tuple[str, str], ...] = ()
    capacity: dict[str, int] = field(default_factory=dict)
    flex_start: bool = False
    """Its nodes come through provisioning requests: the queue admits on it after
    :data:`FLEX_START_CHECK`."""


def _nodes(pool: PoolInfo) -> int:
    return pool.max_nodes if pool.autoscaling else pool.node_count


def _machine_capacity(machine: MachineShape, nodes: int) -> dict[str, int]:
    return {"cpu": nodes * machine.vcpus * 1000, "memory": nodes * machine.memory_gib * 1024}


def _accelerator_flavor(pool: PoolInfo) -> Flavor | str:
    """The pool's flavor, or why it has none."""
    accelerator = pool_accelerator(pool)
    machine = machine_shape(pool.hardware.machine_type)
    if accelerator is None or machine is None:
        what = pool.hardware.machine_type if machine is None else pool.hardware.label
        return f"node pool {pool.name} gets no Kueue flavor: Kinetic does not know {what}"
    placed = scheduling_for(
        accelerator, spot=pool.spot, reservation=pool.reservation, flex_start=pool.flex_start
    )
    nodes = _nodes(pool)
    capacity = _machine_capacity(machine, nodes)
    if accelerator.category == "gpu":
        capacity[GPU_RESOURCE] = nodes * pool.hardware.gpu_count
        resource = GPU_RESOURCE
    else:
        capacity[TPU_RESOURCE] = nodes * accelerator.chips_per_host
        resource = TPU_RESOURCE
    taints = [(resource, _ACCELERATOR_TAINTS[resource])]
    if pool.spot:
        taints.append(SPOT_TAINT)
    if pool.reservation:
        taints.append((RESERVATION_LABEL, pool.reservation))
    if pool.flex_start:
        taints.append((FLEX_START_LABEL, "true"))
    labels = {**placed.node_selector, NODEPOOL_LABEL: pool.name}
    return Flavor(pool.name, labels, tuple(taints), capacity, pool.flex_start)


_CAPACITY_ORDER = {"reservation": 0, "spot": 1, "flex-start": 2, "on-demand": 3}


def _preference(pool: PoolInfo) -> tuple[int, int, str]:
    """Where a pool's flavor stands in every ClusterQueue: capacity already paid for (a
    reservation) first, then spot, then flex-start (discounted, but it waits for its nodes),
    then on-demand; within one kind the newer accelerator
    first (later in the catalogue); then by name. Kueue tries a queue's flavors in this one
    order for every job, so a job's list of choices must agree with it (``kinetic_gke.
    queueing.flavor_order`` checks that before upload)."""
    kind = pool.capacity.split(":", 1)[0]
    accelerator = pool_accelerator(pool)
    names = valid_accelerator_names()
    rank = names.index(accelerator.name) if accelerator is not None else len(names)
    return _CAPACITY_ORDER[kind], -rank, pool.name


def _cpu_flavors(pools: Sequence[PoolInfo], scaling: Autoprovisioning) -> list[Flavor]:
    def capacity(spot: bool) -> dict[str, int]:
        if scaling.enabled and scaling.max_cpu:
            return {"cpu": scaling.max_cpu * 1000, "memory": scaling.max_memory_gb * 1024}
        total = {"cpu": 0, "memory": 0}
        for pool in pools:
            machine = machine_shape(pool.hardware.machine_type)
            if pool.spot == spot and pool_accelerator(pool) is None and machine is not None:
                for resource, amount in _machine_capacity(machine, _nodes(pool)).items():
                    total[resource] += amount
        return total

    spot = scheduling_for(parse_accelerator("cpu"), spot=True).node_selector
    return [  # spot first, as for accelerators (an on-demand job does not tolerate spot)
        Flavor(CPU_SPOT_FLAVOR, spot, (SPOT_TAINT,), capacity(True)),
        Flavor(CPU_FLAVOR, capacity=capacity(False)),
    ]


def flavors(pools: Sequence[PoolInfo], scaling: Autoprovisioning) -> tuple[list[Flavor], list[str]]:
    """Every flavor, in the order Kueue tries them (the accelerator pools' by
    :func:`_preference`, then CPU's), and a note for each pool left without one."""
    made: list[Flavor] = []
    notes: list[str] = []
    for pool in sorted(pools, key=_preference):
        if not pool.hardware.gpu_type and not pool.hardware.tpu:
            continue
        flavor = _accelerator_flavor(pool)
        if isinstance(flavor, str):
            notes.append(flavor)
        else:
            made.append(flavor)
    return made + _cpu_flavors(pools, scaling), notes


def _split(total: int, shares: Sequence[int]) -> list[int]:
    """``total`` in parts proportional to ``shares`` that add up to it exactly (the largest
    remainders get the units rounding leaves; ties go to the earlier share)."""
    weight = sum(shares)
    parts = [total * share // weight for share in shares]
    remainders = sorted(range(len(shares)), key=lambda i: (-(total * shares[i] % weight), i))
    for index in remainders[: total - sum(parts)]:
        parts[index] += 1
    return parts


def _quantity(resource: str, amount: int) -> str:
    if resource == "cpu":
        return str(amount // 1000) if amount % 1000 == 0 else f"{amount}m"
    if resource == "memory":
        return f"{amount // 1024}Gi" if amount % 1024 == 0 else f"{amount}Mi"
    return str(amount)


def _meta(name: str, labels: dict[str, str], **extra: Any) -> dict[str, Any]:
    return {"name": name, "labels": dict(labels), **extra}


def _flavor_object(flavor: Flavor, labels: dict[str, str]) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    if flavor.node_labels:
        spec["nodeLabels"] = dict(flavor.node_labels)
    if flavor.taints:
        spec["nodeTaints"] = [
            {"key": key, "value": value, "effect": "NoSchedule"} for key, value in flavor.taints
        ]
    return {
        "apiVersion": API_VERSION,
        "kind": "ResourceFlavor",
        "metadata": _meta(flavor.name, labels),
        "spec": spec,
    }


def _priority_objects(labels: dict[str, str]) -> list[dict[str, Any]]:
    return [
        {
            "apiVersion": API_VERSION,
            "kind": "WorkloadPriorityClass",
            "metadata": _meta(name, labels),
            "value": value,
            "description": f"Kinetic's priority={name!r}",
        }
        for name, value in DEFAULT_PRIORITY_CLASSES.items()
    ]


def _cluster_queues(
    made: Sequence[Flavor], queues: QueueShares, labels: dict[str, str]
) -> list[dict[str, Any]]:
    present = {resource for flavor in made for resource in flavor.capacity}
    covered = [resource for resource in _ORDER if resource in present]
    shares = [share for _name, share in queues.shares]
    # quota[flavor][resource] is one amount per queue, in the order of queues.shares
    quota = {
        flavor.name: {r: _split(flavor.capacity.get(r, 0), shares) for r in covered}
        for flavor in made
    }
    objects = []
    for index, (name, share) in enumerate(queues.shares):
        group = {
            "coveredResources": covered,
            "flavors": [
                {
                    "name": flavor.name,
                    "resources": [
                        {"name": r, "nominalQuota": _quantity(r, quota[flavor.name][r][index])}
                        for r in covered
                    ],
                }
                for flavor in made
            ],
        }
        annotations = {SHARE_ANNOTATION: str(share)}
        spec: dict[str, Any] = {
            "cohortName": COHORT,
            "namespaceSelector": {},
            "queueingStrategy": "BestEffortFIFO",
            "preemption": {"withinClusterQueue": "LowerPriority", "reclaimWithinCohort": "Any"},
            "resourceGroups": [group],
        }
        flex = [flavor.name for flavor in made if flavor.flex_start]
        if flex:
            spec["admissionChecksStrategy"] = {
                "admissionChecks": [{"name": FLEX_START_CHECK, "onFlavors": flex}]
            }
        objects.append({
            "apiVersion": API_VERSION,
            "kind": "ClusterQueue",
            "metadata": _meta(name, labels, annotations=annotations),
            "spec": spec,
        })  # fmt: skip
    return objects


def _flex_start_objects(made: Sequence[Flavor], labels: dict[str, str]) -> list[dict[str, Any]]:
    """The check flex-start flavors admit through; none without a flex-start flavor."""
    if not any(flavor.flex_start for flavor in made):
        return []
    return [
        {
            "apiVersion": API_VERSION,
            "kind": "ProvisioningRequestConfig",
            "metadata": _meta(FLEX_START_CHECK, labels),
            "spec": {
                "provisioningClassName": PROVISIONING_CLASS,
                "retryStrategy": {"backoffLimitCount": 0},
            },
        },
        {
            "apiVersion": API_VERSION,
            "kind": "AdmissionCheck",
            "metadata": _meta(FLEX_START_CHECK, labels),
            "spec": {
                "controllerName": PROVISIONING_CONTROLLER,
                "parameters": {
                    "apiGroup": GROUP,
                    "kind": "ProvisioningRequestConfig",
                    "name": FLEX_START_CHECK,
                },
            },
        },
    ]


def _local_queues(
    queues: Iterable[str], namespace: str, labels: dict[str, str]
) -> list[dict[str, Any]]:
    return [
        {
            "apiVersion": API_VERSION,
            "kind": "LocalQueue",
            "metadata": _meta(name, labels, namespace=namespace),
            "spec": {"clusterQueue": name},
        }
        for name in queues
    ]


def kueue_objects(
    pools: Sequence[PoolInfo],
    scaling: Autoprovisioning,
    queues: QueueShares,
    namespace: str,
    labels: dict[str, str],
) -> tuple[list[dict[str, Any]], list[str]]:
    """Every object, in the order they are applied, each with ``labels``; and a note for each
    pool left out (hardware Kinetic does not know)."""
    made, notes = flavors(pools, scaling)
    objects = [
        *(_flavor_object(flavor, labels) for flavor in made),
        *_priority_objects(labels),
        *_flex_start_objects(made, labels),
        *_cluster_queues(made, queues, labels),
        *_local_queues(queues.names, namespace, labels),
    ]
    return objects, notes
