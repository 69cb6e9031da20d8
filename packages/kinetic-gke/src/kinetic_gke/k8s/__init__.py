"""Kinetic's Kubernetes layer: a cluster connection and the workload seam, shared by every
Kubernetes backend (``gke`` runs Jobs on it; ``pathways`` runs LeaderWorkerSets)."""

from kinetic_gke.k8s.connection import (
    ClusterConnection,
    Obj,
    get_credentials_command,
    kube_context_name,
    kubeconfig_path,
)
from kinetic_gke.k8s.drivers import csi_driver_installed
from kinetic_gke.k8s.errors import (
    AlreadyExists,
    ApiUnreachable,
    BadRequest,
    Conflict,
    KubeApiError,
    NotFound,
    PermissionDenied,
)
from kinetic_gke.k8s.jobs import JobWorkload
from kinetic_gke.k8s.workload import Workload

__all__ = [
    "AlreadyExists",
    "ApiUnreachable",
    "BadRequest",
    "ClusterConnection",
    "Conflict",
    "JobWorkload",
    "KubeApiError",
    "NotFound",
    "Obj",
    "PermissionDenied",
    "Workload",
    "csi_driver_installed",
    "get_credentials_command",
    "kube_context_name",
    "kubeconfig_path",
]
