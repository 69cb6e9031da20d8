"""The GKE cluster, and the operations every change to it waits on.

The cluster ``kinetic up`` creates has Workload Identity, the GCS FUSE CSI driver, a release
channel, node auto-provisioning limits and a small default pool on the first of the default
machine types the zone offers. On an existing cluster the features that differ are updated one
at a time (GKE changes one feature per update) and its pools are kept. A cluster whose
operation is still running (an earlier run was interrupted) is waited for, not created again;
one that Kinetic created and whose creation failed (GKE leaves it in ERROR, beyond repair) is
deleted and created again.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kinetic_gke.gcp import GoogleApiError, cluster_view, google_error
from kinetic_gke.provision.clients import GoogleClients, calling, wait_container_operation
from kinetic_gke.provision.engine import Plan, Report, Step
from kinetic_gke.provision.spec import ClusterSpec
from kinetic_protocol import ConfigError

__all__ = [
    "BUSY",
    "DEFAULT_POOL",
    "delete_step",
    "get_cluster",
    "made_by_kinetic",
    "node_config",
    "plan_cluster",
    "recreates",
    "require_cluster",
    "run_operation",
    "unplan_cluster",
    "wait_running",
    "wait_step",
]

DEFAULT_POOL = "kinetic-default"
BUSY = ("PROVISIONING", "RECONCILING", "STOPPING")
_SCOPES = ["https://www.googleapis.com/auth/cloud-platform"]
_CONTAINER_API = "container.googleapis.com"


def get_cluster(spec: ClusterSpec, clients: GoogleClients) -> Any:
    """The cluster (a ``container_v1.Cluster``), or None if it does not exist."""
    from google.api_core import exceptions

    def get() -> Any:
        try:
            return clients.container.get_cluster(name=spec.cluster_path)
        except exceptions.NotFound:
            return None

    return calling(f"reading cluster {spec.cluster} ({spec.zone})", get)


def made_by_kinetic(labels: Any, spec: ClusterSpec) -> bool:
    """Whether a resource's labels say ``kinetic up`` (or ``pool add``) made it."""
    return all(labels.get(key) == value for key, value in spec.labels.items())


def recreates(spec: ClusterSpec, cluster: Any) -> bool:
    """Whether ``plan_cluster`` replaces this cluster (its creation by Kinetic failed)."""
    return cluster.status.name == "ERROR" and made_by_kinetic(cluster.resource_labels, spec)


def wait_running(spec: ClusterSpec, clients: GoogleClients, report: Report) -> None:
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


def require_cluster(spec: ClusterSpec, clients: GoogleClients) -> Any:
    """The cluster; a ConfigError naming the command that creates it if there is none."""
    cluster = get_cluster(spec, clients)
    if cluster is None:
        raise ConfigError(
            f"Cluster {spec.cluster} does not exist in {spec.zone} (project {spec.project}). "
            f"Create it first: `kinetic up --project {spec.project} --zone {spec.zone} "
            f"--cluster {spec.cluster}`."
        )
    return cluster


def run_operation(
    spec: ClusterSpec,
    clients: GoogleClients,
    report: Report,
    doing: str,
    start: Callable[[], Any],
    *,
    exists_ok: bool = False,
    gone_ok: bool = False,
) -> None:
    """Wait for the operations running on the cluster, start one and wait for it. "Already
    exists" (``exists_ok``: an earlier, interrupted run made it) and "not found" (``gone_ok``)
    end it there."""
    wait_running(spec, clients, report)
    try:
        operation = calling(doing, start)
    except GoogleApiError as exc:
        if exists_ok and exc.code == 409:
            wait_running(spec, clients, report)
            return
        if gone_ok and exc.code == 404:
            return
        raise
    wait_container_operation(
        clients, doing, operation, project=spec.project, location=spec.zone, report=report
    )


def wait_step(spec: ClusterSpec, clients: GoogleClients, target: str, status: str) -> Step:
    """A step that waits for what runs on the cluster (an earlier run's operation)."""
    what = f"wait for the running operation ({status.lower()})"
    return Step("update", target, lambda report: wait_running(spec, clients, report), what)


def delete_step(
    spec: ClusterSpec, clients: GoogleClients, what: str, delete: Callable[[], Any], detail: str
) -> Step:
    """A step that deletes ``what`` with a GKE operation; one already gone is success."""

    def run(report: Report) -> None:
        run_operation(spec, clients, report, f"deleting {what}", delete, gone_ok=True)

    return Step("delete", what, run, detail)


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
            raise google_error(exc, f"checking machine type {machine_type} in {spec.zone}") from exc
        return machine_type
    raise ConfigError(
        f"Zone {spec.zone} offers none of the default pool's machine types "
        f"({', '.join(spec.machine_types)}). Pick another zone with --zone."
    )


def node_config(
    spec: ClusterSpec, machine_type: str, *, node_labels: dict[str, str] | None = None, **extra: Any
) -> Any:
    """The nodes of a Kinetic pool: its node service account, Workload Identity's metadata
    server, Kinetic's labels (and ``node_labels``)."""
    from google.cloud import container_v1

    return container_v1.NodeConfig(
        machine_type=machine_type,
        service_account=spec.account("nodes"),
        oauth_scopes=_SCOPES,
        workload_metadata_config=container_v1.WorkloadMetadataConfig(
            mode=container_v1.WorkloadMetadataConfig.Mode.GKE_METADATA
        ),
        labels={**spec.labels, **(node_labels or {})},
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
                config=node_config(spec, machine_type),
                autoscaling=c.NodePoolAutoscaling(enabled=True, min_node_count=1, max_node_count=3),
                management=c.NodeManagement(auto_repair=True, auto_upgrade=True),
            )
        ],
    )


def _create_step(spec: ClusterSpec, clients: GoogleClients, machine_type: str | None) -> Step:
    """Create the cluster; ``machine_type`` None: pick it when the step runs (the Compute
    Engine API was off when the plan was made)."""

    def run(report: Report) -> None:
        cluster = _new_cluster(spec, machine_type or _pick_machine_type(spec, clients))
        report(f"  ... creating cluster {spec.cluster}: this takes 5 to 15 minutes")
        run_operation(
            spec, clients, report, f"creating cluster {spec.cluster}",
            lambda: clients.container.create_cluster(
                parent=f"projects/{spec.project}/locations/{spec.zone}", cluster=cluster
            ),
            exists_ok=True,
        )  # fmt: skip

    machine = machine_type or f"{spec.machine_types[0]} or the next the zone offers"
    detail = (
        f"Workload Identity, GCS FUSE driver, {spec.release_channel.lower()} channel, "
        f"auto-provisioning up to {spec.max_cpu} vCPUs / {spec.max_memory_gb} GB, default pool "
        f"{DEFAULT_POOL} ({machine}, 1-3 nodes)"
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
        update = container_v1.ClusterUpdate(**change)
        run_operation(
            spec, clients, report, f"{what} on cluster {spec.cluster}",
            lambda: clients.container.update_cluster(name=spec.cluster_path, update=update),
        )  # fmt: skip

    return Step("update", f"cluster {spec.cluster}", run, what)


def _delete_cluster_step(spec: ClusterSpec, clients: GoogleClients, detail: str) -> Step:
    return delete_step(
        spec, clients, f"cluster {spec.cluster} ({spec.zone})",
        lambda: clients.container.delete_cluster(name=spec.cluster_path), detail,
    )  # fmt: skip


def plan_cluster(spec: ClusterSpec, clients: GoogleClients) -> Plan:
    if not clients.readable(_CONTAINER_API):  # no cluster exists where the GKE API is off
        return Plan([_create_step(spec, clients, None)])
    cluster = get_cluster(spec, clients)

    def create() -> Step:
        readable = clients.readable("compute.googleapis.com")
        return _create_step(spec, clients, _pick_machine_type(spec, clients) if readable else None)

    if cluster is None:
        return Plan([create()])
    status = cluster.status.name
    if status == "ERROR":
        message = cluster.status_message or "no message"
        if not recreates(spec, cluster):
            raise ConfigError(
                f"Cluster {spec.cluster} is in ERROR ({message}) and was not made by Kinetic, "
                f"so Kinetic leaves it alone. Delete it (`kinetic down --cluster {spec.cluster}` "
                "keeps the bucket), then run `kinetic up` again."
            )
        replaced = _delete_cluster_step(spec, clients, f"its creation failed ({message})")
        return Plan([replaced, create()])
    plan = Plan()
    if status in BUSY:
        plan.steps.append(wait_step(spec, clients, f"cluster {spec.cluster}", status))
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
    pools = ", ".join(pool.name for pool in cluster.node_pools)
    return Plan([_delete_cluster_step(spec, clients, f"with its pools: {pools}")])
