"""The whole of ``kinetic up`` and ``kinetic down`` as plans, in dependency order.

``up``: APIs first (nothing else answers without them), then service accounts and roles (the
cluster's nodes run as one), the cluster, the bucket and registry, the Workload Identity binding,
and last the in-cluster objects, planned once the cluster exists. ``down`` undoes it in reverse,
keeping the bucket unless asked, and never disabling APIs (other things may use them).
"""

from __future__ import annotations

from kinetic.provision import cloud, cluster, incluster
from kinetic.provision.clients import GoogleClients
from kinetic.provision.engine import Plan, Report, Step, apply
from kinetic.provision.spec import ClusterSpec
from kinetic_gke.gcp import cluster_view

__all__ = ["down_plan", "in_cluster_step", "up_plan"]


def in_cluster_step(spec: ClusterSpec, clients: GoogleClients) -> Step:
    """The in-cluster objects, planned when the cluster exists (deferred)."""

    def run(report: Report) -> None:
        found = cluster.get_cluster(spec, clients)
        pools = cluster_view(found).pools if found is not None else ()
        plan = incluster.plan_in_cluster(spec, incluster.connect(spec), pools)
        for line in plan.render().splitlines():
            report(line)
        apply(plan, lambda line: report("  " + line))

    what = "namespace, service account, LeaderWorkerSet, GPU driver"
    return Step("deferred", "in-cluster objects", run, f"{what}: planned once the cluster is up")


def up_plan(spec: ClusterSpec, clients: GoogleClients) -> Plan:
    apis = cloud.plan_apis(spec, clients)
    if not apis.empty:  # the other APIs cannot be read before they are enabled
        return apis + Plan([_continue_step(spec, clients)])
    plan = (
        apis
        + cloud.plan_service_accounts(spec, clients)
        + cluster.plan_cluster(spec, clients)
        + cloud.plan_bucket(spec, clients)
        + cloud.plan_registry(spec, clients)
        + cloud.plan_workload_identity(spec, clients)
    )
    found = cluster.get_cluster(spec, clients)
    if found is None or found.status.name != "RUNNING" or plan.steps:
        return plan + Plan([in_cluster_step(spec, clients)])
    return plan + incluster.plan_in_cluster(
        spec, incluster.connect(spec), cluster_view(found).pools
    )


def _continue_step(spec: ClusterSpec, clients: GoogleClients) -> Step:
    def run(report: Report) -> None:
        plan = up_plan(spec, clients)
        for line in plan.render().splitlines():
            report(line)
        apply(plan, lambda line: report("  " + line))

    return Step("deferred", "everything else", run, "planned once the APIs are enabled")


def down_plan(spec: ClusterSpec, clients: GoogleClients, *, delete_bucket: bool) -> Plan:
    plan = (
        cluster.unplan_cluster(spec, clients)
        + cloud.unplan_registry(spec, clients)
        + cloud.unplan_accounts(spec, clients)
    )
    if delete_bucket:
        plan += cloud.unplan_bucket(spec, clients)
    else:
        plan.notes.append(f"bucket gs://{spec.bucket} is kept (--delete-bucket deletes it)")
    plan.notes.append("enabled APIs are kept")
    return plan
