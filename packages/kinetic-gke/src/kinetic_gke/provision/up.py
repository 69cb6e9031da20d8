"""The whole of ``kinetic up`` and ``kinetic down`` as plans, in dependency order.

``up``: APIs first (nothing else answers without them), then service accounts and roles (the
cluster's nodes run as one), the cluster, the bucket and registry, the Workload Identity
binding, and last the in-cluster objects. What an API that is still off serves cannot be read,
so it is planned as missing (it cannot exist, or the step that makes it accepts finding it);
so is what is inside a cluster that does not run yet. Every step is planned before the first
one runs, so ``--dry-run`` shows all of them. ``down`` undoes it in reverse, keeping the bucket
unless asked, and never disabling APIs (other things may use them).
"""

from __future__ import annotations

import functools

from kinetic_gke.gcp import cluster_view
from kinetic_gke.provision import accounts, cloud, cluster, incluster
from kinetic_gke.provision.clients import GoogleClients
from kinetic_gke.provision.engine import Plan
from kinetic_gke.provision.spec import ClusterSpec

__all__ = ["down_plan", "up_plan"]


def up_plan(spec: ClusterSpec, clients: GoogleClients) -> Plan:
    """Everything ``kinetic up`` would do now (``clients`` learns which APIs are off)."""
    disabled = cloud.disabled_apis(clients, spec.project)
    clients.unreadable = frozenset(disabled)
    plan = (
        cloud.plan_apis(spec, clients, disabled)
        + accounts.plan_service_accounts(spec, clients)
        + cluster.plan_cluster(spec, clients)
        + cloud.plan_bucket(spec, clients)
        + cloud.plan_registry(spec, clients)
        + accounts.plan_workload_identity(spec, clients)
        + _in_cluster(spec, clients)
    )
    if disabled:
        plan.notes.insert(
            0,
            f"{len(disabled)} APIs are off, so what they serve cannot be read yet: it is planned "
            "as missing, and a step that finds it there keeps it",
        )
    return plan


def _in_cluster(spec: ClusterSpec, clients: GoogleClients) -> Plan:
    connect = functools.cache(lambda: incluster.connect(spec, clients))
    found = None
    if clients.readable("container.googleapis.com"):
        found = cluster.get_cluster(spec, clients)
    if found is None or cluster.recreates(spec, found):
        return incluster.plan_in_cluster(spec, connect, (), incluster.new_cluster(spec))
    pools = cluster_view(found).pools
    if found.status.name != "RUNNING":  # being created by an earlier, interrupted run
        return incluster.plan_in_cluster(spec, connect, pools, incluster.new_cluster(spec))
    found_in = incluster.read_in_cluster(spec, connect())
    return incluster.plan_in_cluster(
        spec, connect, pools, found_in, cluster_view(found).autoprovisioning
    )


def down_plan(spec: ClusterSpec, clients: GoogleClients, *, delete_bucket: bool) -> Plan:
    """What ``kinetic down`` deletes; where an API is off there is nothing of it to delete (or,
    for IAM, nothing it can see)."""
    off = set(cloud.disabled_apis(clients, spec.project))
    plan = Plan()
    if "container.googleapis.com" not in off:
        plan += cluster.unplan_cluster(spec, clients)
    if "artifactregistry.googleapis.com" not in off:
        plan += cloud.unplan_registry(spec, clients)
    if off.isdisjoint({"iam.googleapis.com", "cloudresourcemanager.googleapis.com"}):
        plan += accounts.unplan_accounts(spec, clients)
    else:
        plan.notes.append("service accounts not checked: the IAM or Resource Manager API is off")
    if delete_bucket and "storage.googleapis.com" not in off:
        plan += cloud.unplan_bucket(spec, clients)
    elif not delete_bucket:
        plan.notes.append(f"bucket gs://{spec.bucket} is kept (--delete-bucket deletes it)")
    plan.notes.append("enabled APIs are kept" + (f" ({len(off)} are off)" if off else ""))
    return plan
