"""Node pools made from the accelerator catalogue: ``kinetic pool add`` and ``pool remove``.

A pool's shape (machine type, GPUs or TPU topology, hosts) comes from
:func:`kinetic_gke.pools.pool_shape`, the rule the pre-flight check and ``doctor`` use to
recognise it later. A pool whose creation by Kinetic failed (GKE leaves it in ERROR) is
deleted and created again by the next ``pool add``. On a cluster with Kueue, the queues' quotas
follow: a pool added raises them by its capacity, one removed lowers them (its flavor goes).
"""

from __future__ import annotations

import functools
from typing import Any

from kinetic_gke.gcp import cluster_view
from kinetic_gke.k8s.kueue_api import served_version
from kinetic_gke.pools import SPOT_TAINT, PoolInfo, PoolShape
from kinetic_gke.provision.clients import GoogleClients
from kinetic_gke.provision.cluster import (
    BUSY,
    delete_step,
    made_by_kinetic,
    node_config,
    require_cluster,
    run_operation,
    wait_step,
)
from kinetic_gke.provision.engine import Plan, Report, Step
from kinetic_gke.provision.kueue_queues import plan_queues, read_queues
from kinetic_gke.provision.spec import ClusterSpec
from kinetic_gke.scheduling import FLEX_START_LABEL, RESERVATION_LABEL
from kinetic_protocol import ConfigError
from kinetic_protocol.capacity import RESERVATION_PREFIX, check_capacity

__all__ = ["PoolRequest", "node_pool", "plan_pool", "unplan_pool"]


class PoolRequest:
    """A validated ``kinetic pool add``: the shape and how it scales."""

    def __init__(
        self,
        shape: PoolShape,
        *,
        spot: bool = False,
        min_nodes: int = 0,
        max_nodes: int | None = None,
        reservation: str = "",
        flex_start: bool = False,
    ) -> None:
        hosts = shape.hosts
        if max_nodes is None:
            max_nodes = hosts if shape.multi_host else max(3, min_nodes)
        if spot and reservation:
            raise ConfigError("--spot and --reservation exclude each other: a reservation is "
                              "on-demand capacity.")  # fmt: skip
        if flex_start and (spot or reservation):
            other = "--spot" if spot else "--reservation"
            raise ConfigError(
                f"--flex-start and {other} exclude each other: a flex-start pool gets its nodes "
                "only through provisioning requests (GKE's queued provisioning). Make one pool "
                "of each kind."
            )
        if flex_start and min_nodes:
            raise ConfigError(
                f"--flex-start with --min-nodes {min_nodes}: a flex-start pool has no node "
                "until a provisioning request gets it some, so --min-nodes is 0."
            )
        if reservation:
            check_capacity(f"{RESERVATION_PREFIX}{reservation}")
        if shape.multi_host:
            if max_nodes != hosts or min_nodes not in (0, hosts):
                raise ConfigError(
                    f"{shape.accelerator.name} is one slice of {hosts} TPU hosts, so its pool "
                    f"holds exactly {hosts} nodes: --max-nodes {hosts}, and --min-nodes 0 (it "
                    f"scales to zero when idle) or {hosts} (always up)."
                )
        elif not 0 <= min_nodes <= max_nodes or max_nodes < 1:
            raise ConfigError(
                f"--min-nodes {min_nodes} and --max-nodes {max_nodes}: need 0 <= min <= max and "
                "max >= 1."
            )
        self.shape, self.spot, self.reservation = shape, spot, reservation
        self.flex_start = flex_start
        self.min_nodes, self.max_nodes = min_nodes, max_nodes

    def describe(self) -> str:
        shape = self.shape
        return (
            f"{shape.hardware.label} on {shape.hardware.machine_type}"
            + (f", {shape.hosts} hosts, compact placement" if shape.multi_host else "")
            + f", {self.min_nodes}-{self.max_nodes} nodes"
            + (", spot" if self.spot else "")
            + (", flex-start (queued provisioning)" if self.flex_start else "")
            + (f", reservation {self.reservation}" if self.reservation else "")
        )


def node_pool(spec: ClusterSpec, name: str, request: PoolRequest) -> Any:
    """The ``container_v1.NodePool`` for a pool request."""
    from google.cloud import container_v1 as c

    shape, hardware = request.shape, request.shape.hardware
    extra: dict[str, Any] = {"spot": request.spot}
    if hardware.gpu_type:
        extra["accelerators"] = [
            c.AcceleratorConfig(
                accelerator_type=hardware.gpu_type,
                accelerator_count=hardware.gpu_count,
                gpu_driver_installation_config=c.GPUDriverInstallationConfig(
                    gpu_driver_version=c.GPUDriverInstallationConfig.GPUDriverVersion.LATEST
                ),
            )
        ]
    taints = [SPOT_TAINT] if request.spot else []
    if request.reservation:
        # Labelled and tainted with it, so only jobs that ask for the reservation land there
        # (their pods select and tolerate it) and Kueue gives it a flavor of its own.
        taints.append((RESERVATION_LABEL, request.reservation))
        extra["node_labels"] = {RESERVATION_LABEL: request.reservation}
        extra["reservation_affinity"] = c.ReservationAffinity(
            consume_reservation_type=c.ReservationAffinity.Type.SPECIFIC_RESERVATION,
            key="compute.googleapis.com/reservation-name",
            values=[request.reservation],
        )
    if request.flex_start:
        # GKE's queued provisioning: nodes come only for a provisioning request, all at once,
        # and consume no reservation. Labelled and tainted so only flex-start jobs land there.
        taints.append((FLEX_START_LABEL, "true"))
        extra["node_labels"] = {FLEX_START_LABEL: "true"}
        extra["reservation_affinity"] = c.ReservationAffinity(
            consume_reservation_type=c.ReservationAffinity.Type.NO_RESERVATION
        )
    if taints:
        extra["taints"] = [
            c.NodeTaint(key=key, value=value, effect=c.NodeTaint.Effect.NO_SCHEDULE)
            for key, value in taints
        ]
    pool = c.NodePool(
        name=name,
        initial_node_count=request.min_nodes,
        config=node_config(spec, hardware.machine_type, **extra),
        autoscaling=c.NodePoolAutoscaling(
            enabled=True, min_node_count=request.min_nodes, max_node_count=request.max_nodes
        ),
        # GKE refuses auto-repair on a queued-provisioning pool
        management=c.NodeManagement(auto_repair=not request.flex_start, auto_upgrade=True),
    )
    if request.flex_start:  # what else GKE requires of a queued-provisioning pool
        pool.queued_provisioning = c.NodePool.QueuedProvisioning(enabled=True)
        pool.autoscaling = c.NodePoolAutoscaling(
            enabled=True, min_node_count=0, max_node_count=request.max_nodes,
            location_policy=c.NodePoolAutoscaling.LocationPolicy.ANY,
        )  # fmt: skip
    if hardware.tpu_topology and shape.multi_host:
        pool.placement_policy = c.NodePool.PlacementPolicy(
            type_=c.NodePool.PlacementPolicy.Type.COMPACT, tpu_topology=hardware.tpu_topology
        )
    return pool


def _create_step(
    spec: ClusterSpec, clients: GoogleClients, name: str, request: PoolRequest
) -> Step:
    def run(report: Report) -> None:
        pool = node_pool(spec, name, request)
        run_operation(
            spec, clients, report, f"creating node pool {name}",
            lambda: clients.container.create_node_pool(parent=spec.cluster_path, node_pool=pool),
            exists_ok=True,
        )  # fmt: skip

    return Step("create", f"node pool {name}", run, request.describe())


def _delete_step(spec: ClusterSpec, clients: GoogleClients, name: str, detail: str = "") -> Step:
    path = f"{spec.cluster_path}/nodePools/{name}"
    return delete_step(
        spec, clients, f"node pool {name}",
        lambda: clients.container.delete_node_pool(name=path), detail,
    )  # fmt: skip


def _requested(name: str, request: PoolRequest) -> PoolInfo:
    """The pool ``request`` makes, as the cluster will have it."""
    return PoolInfo(
        name, request.shape.hardware, spot=request.spot, autoscaling=True,
        min_nodes=request.min_nodes, max_nodes=request.max_nodes, reservation=request.reservation,
        flex_start=request.flex_start,
    )  # fmt: skip


def _queues_for(
    spec: ClusterSpec, clients: GoogleClients, cluster: Any, pools: list[PoolInfo]
) -> Plan:
    """Kueue's quotas for the pools the cluster will have; nothing where Kueue is not served."""
    from kinetic_gke.provision.incluster import connect as connect_to

    connect = functools.cache(lambda: connect_to(spec, clients))
    if served_version(connect()) is None:
        return Plan(notes=["Kueue is not installed, so no queue has a quota to change"])
    found = read_queues(connect(), spec.namespace)
    scaling = cluster_view(cluster).autoprovisioning
    return plan_queues(spec, connect, pools, scaling, found)


def plan_pool(spec: ClusterSpec, clients: GoogleClients, name: str, request: PoolRequest) -> Plan:
    cluster = require_cluster(spec, clients)
    others = [pool for pool in cluster_view(cluster).pools if pool.name != name]
    existing = next((pool for pool in cluster.node_pools if pool.name == name), None)
    if existing is None:
        plan = Plan([_create_step(spec, clients, name, request)])
        return plan + _queues_for(spec, clients, cluster, [*others, _requested(name, request)])
    status = existing.status.name
    if status in BUSY:
        return Plan([wait_step(spec, clients, f"node pool {name}", status)])
    if status != "ERROR":
        kept = Plan(notes=[f"node pool {name} exists (kept as it is)"])
        return kept + _queues_for(spec, clients, cluster, list(cluster_view(cluster).pools))
    message = existing.status_message or "no message"
    if not made_by_kinetic(existing.config.labels, spec):
        raise ConfigError(
            f"Node pool {name} is in ERROR ({message}) and was not made by Kinetic. Remove it "
            f"(`kinetic pool remove {name}`), then add it again."
        )
    replaced = _delete_step(spec, clients, name, f"its creation failed ({message})")
    plan = Plan([replaced, _create_step(spec, clients, name, request)])
    return plan + _queues_for(spec, clients, cluster, [*others, _requested(name, request)])


def unplan_pool(spec: ClusterSpec, clients: GoogleClients, name: str) -> Plan:
    cluster = require_cluster(spec, clients)
    names = [pool.name for pool in cluster.node_pools]
    if name not in names:
        raise ConfigError(
            f"Cluster {spec.cluster} has no node pool {name!r}. Its pools: "
            f"{', '.join(names) or 'none'} (`kinetic pool list`)."
        )
    others = [pool for pool in cluster_view(cluster).pools if pool.name != name]
    return Plan([_delete_step(spec, clients, name)]) + _queues_for(spec, clients, cluster, others)
