"""Which API groups a cluster serves: an add-on (LeaderWorkerSet, Kueue) is there when its group
is, whoever installed it."""

from __future__ import annotations

from kinetic_gke.k8s.connection import ClusterConnection

__all__ = ["served_version"]


def served_version(connection: ClusterConnection, group: str) -> str | None:
    """The version of ``group`` the cluster prefers, or None if it serves none."""
    from kubernetes import client

    apis = client.ApisApi(connection.api_client)
    listing = connection.read("discovering API groups", apis.get_api_versions)
    for found in listing.get("groups") or []:
        if found.get("name") == group:
            return str((found.get("preferredVersion") or {}).get("version") or "unknown")
    return None
