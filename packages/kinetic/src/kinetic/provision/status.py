"""What ``kinetic status`` shows, read from the cloud and the cluster in one pass, as a
JSON-ready document (the table view renders the same document)."""

from __future__ import annotations

from typing import Any

from kinetic.provision import cluster as clusters
from kinetic.provision.clients import GoogleClients, calling
from kinetic.provision.spec import ClusterSpec
from kinetic_gke.gcp import cluster_view
from kinetic_gke.pools import PoolInfo
from kinetic_protocol import KineticError

__all__ = ["cluster_status", "pool_document"]


def pool_document(pool: PoolInfo) -> dict[str, Any]:
    return {
        "name": pool.name,
        "accelerator": pool.accelerator_label,
        "machine_type": pool.machine_type,
        "min_nodes": pool.min_nodes,
        "max_nodes": pool.max_nodes,
        "spot": pool.spot,
        "status": pool.status,
        "gpu_driver_managed": pool.gpu_driver_managed,
    }


def _running(spec: ClusterSpec) -> str:
    """Kinetic's Jobs and LeaderWorkerSets in the namespace, or why they cannot be counted."""
    from kinetic.provision.incluster import connect, lws_version

    try:
        connection = connect(spec)
        jobs = connection.read(
            "listing Jobs", connection.batch.list_namespaced_job, spec.namespace,
            label_selector="app=kinetic",
        )  # fmt: skip
        active = [j for j in jobs.get("items") or [] if (j.get("status") or {}).get("active")]
        text = f"{len(active)} job(s) running, {len(jobs.get('items') or [])} kept"
        version = lws_version(connection)
        if version is not None:
            lws = connection.read(
                "listing LeaderWorkerSets", connection.custom.list_namespaced_custom_object,
                "leaderworkerset.x-k8s.io", version, spec.namespace, "leaderworkersets",
                label_selector="app=kinetic-pathways",
            )  # fmt: skip
            text += f", {len(lws.get('items') or [])} slice(s)"
    except KineticError as exc:
        return f"unknown ({exc})"
    return f"{text} in namespace {spec.namespace}"


def _lws(spec: ClusterSpec) -> str:
    from kinetic.provision.incluster import connect, lws_version

    try:
        version = lws_version(connect(spec))
    except KineticError as exc:
        return f"unknown ({exc})"
    return f"installed (API {version})" if version else ""


def cluster_status(spec: ClusterSpec, clients: GoogleClients | None = None) -> dict[str, Any]:
    from google.api_core import exceptions

    clients = clients or GoogleClients()
    found = clusters.get_cluster(spec, clients)
    bucket = calling(
        f"reading bucket gs://{spec.bucket}", clients.storage.lookup_bucket, spec.bucket
    )

    def repository() -> Any:
        try:
            return clients.registry.get_repository(name=spec.repository_path)
        except exceptions.NotFound:
            return None

    document: dict[str, Any] = {
        "project": spec.project,
        "zone": spec.zone,
        "name": spec.cluster,
        "namespace": spec.namespace,
        "bucket": {"name": spec.bucket, "exists": bucket is not None},
        "registry": {
            "name": spec.repository_path,
            "exists": calling("reading the repository", repository) is not None,
        },
        "cluster": None,
        "lws": "",
        "running": "",
    }
    if found is None:
        return document
    view = cluster_view(found)
    document["cluster"] = {
        "status": view.status,
        "version": view.version,
        "release_channel": view.release_channel,
        "workload_pool": view.workload_pool,
        "fuse_driver": view.fuse_driver,
        "autoprovisioning": view.autoprovisioning.enabled,
        "pools": [pool_document(pool) for pool in view.pools],
    }
    if view.status == "RUNNING":
        document["lws"] = _lws(spec)
        document["running"] = _running(spec)
    return document
