"""The GKE cluster and its node pools.

The cluster ``kinetic up`` creates has Workload Identity, the GCS FUSE CSI driver, a release
channel, node auto-provisioning limits and a small default pool on the first of the default
machine types the zone offers. On an existing cluster the features that differ are updated one
at a time (GKE changes one feature per update) and its pools are kept. A cluster whose
operation is still running (an earlier run was interrupted) is waited for, not created again.
"""

from __future__ import annotations

from typing import Any

from kinetic.provision.clients import GoogleClients, calling, wait_container_operation
from kinetic.provision.engine import Plan, Report, Step
from kinetic.provision.spec import ClusterSpec
from kinetic_gke.gcp import GoogleApiError, cluster_view
from kinetic_gke.pools import SPOT_TAINT, PoolShape
from kinetic_protocol import ConfigError

__all__ = [
    "DEFAULT_POOL",
    "PoolRequest",
    "get_cluster",
    "node_pool",
    "plan_cluster",
    "plan_pool",
    "unplan_cluster",
    "unplan_pool",
]

DEFAULT_POOL = "kinetic-default"
_SCOPES = ["https://www.googleapis.com/auth/cloud-platform"]
_BUSY = ("PROVISIONING", "RECONCILING", "STOPPING")


def get_cluster(spec: ClusterSpec, clients: GoogleClients) -> Any:
    """The cluster (a ``container_v1.Cluster``), or None if it does not exist."""
    from google.api_core import exceptions

    def get() -> Any:
        try:
            return clients.container.get_cluster(name=spec.cluster_path)
        except exceptions.NotFound:
            return None

    return calling(f"reading cluster {spec.cluster} ({spec.zone})", get)


def _wait_running(spec: ClusterSpec, clients: GoogleClients, report: Report) -> None:
    """Wait for the cluster's running operations (another run's, or ours) to finish."""
    from google.cloud import container_v1

    listing = calling(
        f"listing operations of {spec.cluster}",
        clients.container.list_operations,
        parent=f"projects/{spec.project}/locations/{spec.zone}",
    )
    for operation in listing.operations:
        if operation.status == container_v1.Operation.Status.DONE:
            continue
        target = operation.target_link
        if target.endswith(f"/clusters/{spec.cluster}") or f"/clusters/{spec.cluster}/" in target:
            wait_container_operation(
                clients, f"waiting for {operation.operation_type.name.lower()}", operation,
                project=spec.project, location=spec.zone, report=report,
            )  # fmt: skip


def _pick_machine_type(spec: ClusterSpec, clients: GoogleClients) -> str:
    from google.api_core import exceptions

    for machine_type in spec.machine_types:
        try:
            clients.machine_types.get(
                project=spec.project, zone=spec.zone, machine_type=machine_type
            )
        except exceptions.NotFound:
            continue
        except Exception as exc:
            raise GoogleApiError(
                f"checking machine type {machine_type} in {spec.zone}: {exc}"
            ) from exc
        return machine_type
    raise ConfigError(
        f"Zone {spec.zone} offers none of the default pool's machine types "
        f"({', '.join(spec.machine_types)}). Pick another zone with --zone."
    )


def _node_config(spec: ClusterSpec, machine_type: str, **extra: Any) -> Any:
    from google.cloud import container_v1

    return container_v1.NodeConfig(
        machine_type=machine_type,
        service_account=spec.account("nodes"),
        oauth_scopes=_SCOPES,
        workload_metadata_config=container_v1.WorkloadMetadataConfig(
            mode=container_v1.WorkloadMetadataConfig.Mode.GKE_METADATA
        ),
        labels=dict(spec.labels),
        **extra,
    )


def _autoscaling(spec: ClusterSpec) -> Any:
    from google.cloud import container_v1 as c

    return c.ClusterAutoscaling(
        enable_node_autoprovisioning=True,
        resource_limits=[
            c.ResourceLimit(resource_type="cpu", minimum=0, maximum=spec.max_cpu),
            c.ResourceLimit(resource_type="memory", minimum=0, maximum=spec.max_memory_gb),
        ],
        autoprovisioning_node_pool_defaults=c.AutoprovisioningNodePoolDefaults(
            service_account=spec.account("nodes"), oauth_scopes=_SCOPES
        ),
    )


def _new_cluster(spec: ClusterSpec, machine_type: str) -> Any:
    from google.cloud import container_v1 as c

    return c.Cluster(
        name=spec.cluster,
        description="Created by kinetic up",
        resource_labels=dict(spec.labels),
        release_channel=c.ReleaseChannel(
            channel=getattr(c.ReleaseChannel.Channel, spec.release_channel)
        ),
        workload_identity_config=c.WorkloadIdentityConfig(workload_pool=spec.workload_pool),
        addons_config=c.AddonsConfig(
            gcs_fuse_csi_driver_config=c.GcsFuseCsiDriverConfig(enabled=True)
        ),
        autoscaling=_autoscaling(spec),
        node_pools=[
            c.NodePool(
                name=DEFAULT_POOL,
                initial_node_count=1,
                config=_node_config(spec, machine_type),
                autoscaling=c.NodePoolAutoscaling(enabled=True, min_node_count=1, max_node_count=3),
                management=c.NodeManagement(auto_repair=True, auto_upgrade=True),
            )
        ],
    )


def _create_step(spec: ClusterSpec, clients: GoogleClients, machine_type: str) -> Step:
    def run(report: Report) -> None:
        doing = f"creating cluster {spec.cluster}"
        try:
            operation = calling(
                doing, clients.container.create_cluster,
                parent=f"projects/{spec.project}/locations/{spec.zone}",
                cluster=_new_cluster(spec, machine_type),
            )  # fmt: skip
        except GoogleApiError as exc:
            if exc.code != 409:
                raise
            _wait_running(spec, clients, report)  # created by an earlier, interrupted run
            return
        report(f"  ... {doing}: this takes 5 to 15 minutes")
        wait_container_operation(
            clients, doing, operation, project=spec.project, location=spec.zone, report=report
        )

    detail = (
        f"Workload Identity, GCS FUSE driver, {spec.release_channel.lower()} channel, "
        f"auto-provisioning up to {spec.max_cpu} vCPUs / {spec.max_memory_gb} GB, default pool "
        f"{DEFAULT_POOL} ({machine_type}, 1-3 nodes)"
    )
    return Step("create", f"cluster {spec.cluster} ({spec.zone})", run, detail)


def _updates(spec: ClusterSpec, cluster: Any) -> list[tuple[str, dict[str, Any]]]:
    """The features of an existing cluster that differ, each as one ClusterUpdate."""
    from google.cloud import container_v1 as c

    view = cluster_view(cluster)
    updates: list[tuple[str, dict[str, Any]]] = []
    if view.workload_pool != spec.workload_pool:
        config = c.WorkloadIdentityConfig(workload_pool=spec.workload_pool)
        updates.append(("enable Workload Identity", {"desired_workload_identity_config": config}))
    if not view.fuse_driver:
        addons = c.AddonsConfig(gcs_fuse_csi_driver_config=c.GcsFuseCsiDriverConfig(enabled=True))
        updates.append(("enable the GCS FUSE CSI driver", {"desired_addons_config": addons}))
    if not view.autoprovisioning.enabled:
        updates.append(
            ("enable node auto-provisioning", {"desired_cluster_autoscaling": _autoscaling(spec)})
        )
    return updates


def _update_step(
    spec: ClusterSpec, clients: GoogleClients, what: str, change: dict[str, Any]
) -> Step:
    from google.cloud import container_v1

    def run(report: Report) -> None:
        doing = f"{what} on cluster {spec.cluster}"
        _wait_running(spec, clients, report)
        operation = calling(
            doing, clients.container.update_cluster,
            name=spec.cluster_path, update=container_v1.ClusterUpdate(**change),
        )  # fmt: skip
        wait_container_operation(
            clients, doing, operation, project=spec.project, location=spec.zone, report=report
        )

    return Step("update", f"cluster {spec.cluster}", run, what)


def plan_cluster(spec: ClusterSpec, clients: GoogleClients) -> Plan:
    cluster = get_cluster(spec, clients)
    if cluster is None:
        return Plan([_create_step(spec, clients, _pick_machine_type(spec, clients))])
    status = cluster.status.name
    plan = Plan()
    if status == "ERROR":
        message = cluster.status_message or "no message"
        raise ConfigError(
            f"Cluster {spec.cluster} is in ERROR ({message}). GKE cannot repair it: delete it "
            f"with `kinetic down --cluster {spec.cluster}` (the bucket is kept), then run "
            "`kinetic up` again."
        )
    if status in _BUSY:
        plan.steps.append(
            Step("update", f"cluster {spec.cluster}", lambda r: _wait_running(spec, clients, r),
                 f"wait for the running operation ({status.lower()})")
        )  # fmt: skip
    plan.steps += [
        _update_step(spec, clients, what, change) for what, change in _updates(spec, cluster)
    ]
    pools = ", ".join(pool.name for pool in cluster.node_pools) or "none"
    plan.notes.append(f"cluster {spec.cluster} exists; its node pools are kept ({pools})")
    return plan


def unplan_cluster(spec: ClusterSpec, clients: GoogleClients) -> Plan:
    cluster = get_cluster(spec, clients)
    if cluster is None:
        return Plan()

    def run(report: Report) -> None:
        from google.api_core import exceptions

        _wait_running(spec, clients, report)
        doing = f"deleting cluster {spec.cluster}"
        try:
            operation = clients.container.delete_cluster(name=spec.cluster_path)
        except exceptions.NotFound:
            return
        except Exception as exc:
            from kinetic_gke.gcp import google_error

            raise google_error(exc, doing) from exc
        wait_container_operation(
            clients, doing, operation, project=spec.project, location=spec.zone, report=report
        )

    pools = ", ".join(pool.name for pool in cluster.node_pools)
    return Plan(
        [Step("delete", f"cluster {spec.cluster} ({spec.zone})", run, f"with its pools: {pools}")]
    )


# -- node pools -----------------------------------------------------------------------------


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
    ) -> None:
        hosts = shape.hosts
        if max_nodes is None:
            max_nodes = hosts if shape.multi_host else max(3, min_nodes)
        if spot and reservation:
            raise ConfigError("--spot and --reservation exclude each other: a reservation is "
                              "on-demand capacity.")  # fmt: skip
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
        self.min_nodes, self.max_nodes = min_nodes, max_nodes


def node_pool(spec: ClusterSpec, name: str, request: PoolRequest) -> Any:
    """The ``container_v1.NodePool`` for a pool request."""
    from google.cloud import container_v1 as c

    shape = request.shape
    extra: dict[str, Any] = {"spot": request.spot}
    if shape.gpu_type:
        extra["accelerators"] = [
            c.AcceleratorConfig(
                accelerator_type=shape.gpu_type,
                accelerator_count=shape.gpu_count,
                gpu_driver_installation_config=c.GPUDriverInstallationConfig(
                    gpu_driver_version=c.GPUDriverInstallationConfig.GPUDriverVersion.LATEST
                ),
            )
        ]
    if request.spot:
        key, value = SPOT_TAINT
        extra["taints"] = [c.NodeTaint(key=key, value=value, effect=c.NodeTaint.Effect.NO_SCHEDULE)]
    if request.reservation:
        extra["reservation_affinity"] = c.ReservationAffinity(
            consume_reservation_type=c.ReservationAffinity.Type.SPECIFIC_RESERVATION,
            key="compute.googleapis.com/reservation-name",
            values=[request.reservation],
        )
    pool = c.NodePool(
        name=name,
        initial_node_count=request.min_nodes,
        config=_node_config(spec, shape.machine_type, **extra),
        autoscaling=c.NodePoolAutoscaling(
            enabled=True, min_node_count=request.min_nodes, max_node_count=request.max_nodes
        ),
        management=c.NodeManagement(auto_repair=True, auto_upgrade=True),
    )
    if shape.tpu_topology and shape.multi_host:
        pool.placement_policy = c.NodePool.PlacementPolicy(
            type_=c.NodePool.PlacementPolicy.Type.COMPACT, tpu_topology=shape.tpu_topology
        )
    return pool


def _require_cluster(spec: ClusterSpec, clients: GoogleClients) -> Any:
    cluster = get_cluster(spec, clients)
    if cluster is None:
        raise ConfigError(
            f"Cluster {spec.cluster} does not exist in {spec.zone} (project {spec.project}). "
            f"Create it first: `kinetic up --project {spec.project} --zone {spec.zone} "
            f"--cluster {spec.cluster}`."
        )
    return cluster


def plan_pool(spec: ClusterSpec, clients: GoogleClients, name: str, request: PoolRequest) -> Plan:
    cluster = _require_cluster(spec, clients)
    existing = next((pool for pool in cluster.node_pools if pool.name == name), None)
    if existing is not None and existing.status.name not in _BUSY:
        return Plan(notes=[f"node pool {name} exists (kept as it is)"])

    def run(report: Report) -> None:
        doing = f"creating node pool {name}"
        _wait_running(spec, clients, report)
        if existing is not None:
            return
        try:
            operation = calling(
                doing, clients.container.create_node_pool,
                parent=spec.cluster_path, node_pool=node_pool(spec, name, request),
            )  # fmt: skip
        except GoogleApiError as exc:
            if exc.code != 409:
                raise
            _wait_running(spec, clients, report)
            return
        wait_container_operation(
            clients, doing, operation, project=spec.project, location=spec.zone, report=report
        )

    shape = request.shape
    offers = (
        f"{shape.gpu_count} x {shape.gpu_type}" if shape.gpu_type else f"TPU {shape.tpu_topology}"
    )
    detail = (
        f"{offers} on {shape.machine_type}"
        + (f", {shape.hosts} hosts, compact placement" if shape.multi_host else "")
        + f", {request.min_nodes}-{request.max_nodes} nodes"
        + (", spot" if request.spot else "")
        + (f", reservation {request.reservation}" if request.reservation else "")
    )
    return Plan([Step("create", f"node pool {name}", run, detail)])


def unplan_pool(spec: ClusterSpec, clients: GoogleClients, name: str) -> Plan:
    cluster = _require_cluster(spec, clients)
    names = [pool.name for pool in cluster.node_pools]
    if name not in names:
        raise ConfigError(
            f"Cluster {spec.cluster} has no node pool {name!r}. Its pools: "
            f"{', '.join(names) or 'none'} (`kinetic pool list`)."
        )

    def run(report: Report) -> None:
        from google.api_core import exceptions

        _wait_running(spec, clients, report)
        doing = f"deleting node pool {name}"
        try:
            operation = clients.container.delete_node_pool(
                name=f"{spec.cluster_path}/nodePools/{name}"
            )
        except exceptions.NotFound:
            return
        except Exception as exc:
            from kinetic_gke.gcp import google_error

            raise google_error(exc, doing) from exc
        wait_container_operation(
            clients, doing, operation, project=spec.project, location=spec.zone, report=report
        )

    return Plan([Step("delete", f"node pool {name}", run)])
