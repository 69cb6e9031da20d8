"""Whether a cluster has a CSI driver installed (GKE's Cloud Storage FUSE add-on registers
``gcsfuse.csi.storage.gke.io``), read from its cluster-scoped ``CSIDriver`` object."""

from __future__ import annotations

from kinetic_gke.k8s.connection import ClusterConnection
from kinetic_gke.k8s.errors import NotFound, PermissionDenied

__all__ = ["csi_driver_installed"]


def csi_driver_installed(connection: ClusterConnection, name: str) -> bool | None:
    """True or False, or None when these credentials may not read ``CSIDriver`` objects."""
    from kubernetes import client

    storage = client.StorageV1Api(connection.api_client)
    try:
        connection.read(f"reading CSIDriver {name}", storage.read_csi_driver, name)
    except NotFound:
        return False
    except PermissionDenied:
        return None
    return True
