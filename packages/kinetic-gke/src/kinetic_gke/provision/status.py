"""What ``kinetic status`` shows, read from the cloud and the cluster in one pass, as a
JSON-ready document (the table view renders the same document)."""

from __future__ import annotations

from typing import Any

from kinetic_gke.gcp import cluster_view
from kinetic_gke.k8s import ClusterConnection
from kinetic_gke.pools import PoolInfo
from kinetic_gke.provision import cluster as clusters
from kinetic_gke.provision.clients import GoogleClients
from kinetic_gke.provision.cloud import disabled_apis, get_bucket, get_repository
from kinetic_gke.provision.incluster import connect, jobset_version, lws_version
from kinetic_gke.provision.kueue_report import read_kueue
from kinetic_gke.provision.spec import ClusterSpec
from kinetic_protocol import KineticError

__all__ = ["cluster_status", "pool_document"]

_GKE, _STORAGE = "container.googleapis.com", "storage.googleapis.com"
_REGISTRY = "artifactregistry.googleapis.com"


def pool_document(pool: PoolInfo) -> dict[str, Any]:
    return {
        "name": pool.name,
        "accelerator": pool.hardware.label,
        "machine_type": pool.hardware.machine_type,
        "min_nodes": pool.min_nodes,
        "max_nodes": pool.max_nodes,
        "spot": pool.spot,
        "capacity": pool.capacity,
        "status": pool.status,
        "gpu_driver_managed": pool.gpu_driver_managed,
    }


def _running(spec: ClusterSpec, connection: ClusterConnection, lws: str | None) -> str:
    """Kinetic's Jobs and LeaderWorkerSets in the namespace."""
    jobs = connection.read(
        "listing Jobs", connection.batch.list_namespaced_job, spec.namespace,
        label_selector="app=kinetic",
    )  # fmt: skip
    active = [j for j in jobs.get("items") or [] if (j.get("status") or {}).get("active")]
    text = f"{len(active)} job(s) running, {len(jobs.get('items') or [])} kept"
    if lws is not None:
        slices = connection.read(
            "listing LeaderWorkerSets", connection.custom.list_namespaced_custom_object,
            "leaderworkerset.x-k8s.io", lws, spec.namespace, "leaderworkersets",
            label_selector="app=kinetic-pathways",
        )  # fmt: skip
        text += f", {len(slices.get('items') or [])} slice(s)"
    return f"{text} in namespace {spec.namespace}"


def _installed(version: str | None) -> str:
    return f"installed (API {version})" if version else ""


def _in_cluster(spec: ClusterSpec, clients: GoogleClients) -> dict[str, Any]:
    """The LeaderWorkerSet and JobSet lines, the running line and Kueue's document, or why they
    cannot be read."""
    try:
        connection = connect(spec, clients)
        lws = lws_version(connection)
        jobset = jobset_version(connection)
        running = _running(spec, connection, lws)
        kueue = read_kueue(connection, spec.namespace).document()
    except KineticError as exc:
        unknown = f"unknown ({exc})"
        return {"lws": unknown, "jobset": unknown, "running": unknown, "kueue": {"error": str(exc)}}
    return {
        "lws": _installed(lws),
        "jobset": _installed(jobset),
        "running": running,
        "kueue": kueue,
    }


def cluster_status(spec: ClusterSpec, clients: GoogleClients | None = None) -> dict[str, Any]:
    clients = clients or GoogleClients()
    off = disabled_apis(clients, spec.project)  # what an API that is off serves does not exist
    found = None if _GKE in off else clusters.get_cluster(spec, clients)
    bucket = None if _STORAGE in off else get_bucket(spec, clients)
    registry = None if _REGISTRY in off else get_repository(spec, clients)
    document: dict[str, Any] = {
        "project": spec.project,
        "zone": spec.zone,
        "name": spec.cluster,
        "namespace": spec.namespace,
        "apis_off": off,
        "bucket": {"name": spec.bucket, "exists": bucket is not None},
        "registry": {"name": spec.repository_path, "exists": registry is not None},
        "cluster": None,
        "lws": "",
        "jobset": "",
        "running": "",
        "kueue": None,
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
        document.update(_in_cluster(spec, clients))
    return document
