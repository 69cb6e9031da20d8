"""What ``kinetic up`` builds, as data: every name and limit, derived from the settings.

Names follow the conventions the rest of Kinetic already reads: the jobs bucket is the gke
backend's default (``<project>-kinetic-<cluster>``), the Artifact Registry repository is the
one bundled images are pushed to (``kinetic``, in the cluster's region), and the Kubernetes
service account is the one pods run as (``KINETIC_SERVICE_ACCOUNT``, default: the namespace's
``default``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from kinetic_gke import default_bucket_name
from kinetic_gke.gcp import cluster_name
from kinetic_gke.images.resolve import region_from_zone
from kinetic_gke.provision.queue_shares import QueueShares
from kinetic_protocol import ConfigError

__all__ = [
    "BUILD_ROLES",
    "DEFAULT_MACHINE_TYPES",
    "JOB_BUCKET_ROLE",
    "NODE_ROLES",
    "REQUIRED_APIS",
    "ClusterSpec",
]

REQUIRED_APIS = (
    "container.googleapis.com",
    "compute.googleapis.com",
    "artifactregistry.googleapis.com",
    "cloudbuild.googleapis.com",
    "storage.googleapis.com",
    "iam.googleapis.com",
    "cloudresourcemanager.googleapis.com",
)
NODE_ROLES = (
    "roles/logging.logWriter",
    "roles/monitoring.metricWriter",
    "roles/monitoring.viewer",
    "roles/stackdriver.resourceMetadata.writer",
    "roles/artifactregistry.reader",
)
"""What GKE nodes need (Google's least-privilege node account) plus pulling images."""
BUILD_ROLES = (
    "roles/artifactregistry.writer",
    "roles/logging.logWriter",
)
"""What Cloud Build needs to push the images Kinetic builds and write its logs."""
JOB_BUCKET_ROLE = "roles/storage.objectUser"
"""What job pods need on the jobs bucket, and nowhere else (granted with a condition)."""
DEFAULT_MACHINE_TYPES = ("e2-standard-4", "n2-standard-4", "n1-standard-4")
"""The default pool's machine: the first of these the zone offers."""


@dataclass(frozen=True)
class ClusterSpec:
    """Everything ``kinetic up`` makes for one cluster."""

    project: str
    zone: str
    cluster: str
    namespace: str = "default"
    repository: str = "kinetic"
    ksa: str = "default"
    release_channel: str = "REGULAR"
    max_cpu: int = 256
    """Node auto-provisioning may create CPU pools up to this many vCPUs in all."""
    max_memory_gb: int = 1024
    machine_types: tuple[str, ...] = DEFAULT_MACHINE_TYPES
    bucket_override: str = ""
    labels: dict[str, str] = field(default_factory=lambda: {"managed-by": "kinetic"})
    queues: str = ""
    """The queues declared for Kueue (``KINETIC_QUEUES``); empty: keep the cluster's."""

    def __post_init__(self) -> None:
        if not self.project:
            raise ConfigError(
                "A Kinetic cluster needs a GCP project: pass --project, set KINETIC_PROJECT, or "
                "use a profile (`kinetic profile create NAME --project P --use`)."
            )
        region_from_zone(self.zone)  # a ConfigError for what is not a zone
        if self.queues:
            QueueShares.parse(self.queues)  # refused before anything is planned
        if not re.fullmatch(r"[a-z]([-a-z0-9]{0,38}[a-z0-9])?", self.cluster):
            raise ConfigError(
                f"Cluster name {self.cluster!r} is not valid on GKE: lowercase letters, digits "
                "and '-', starting with a letter, at most 40 characters."
            )

    @property
    def region(self) -> str:
        return region_from_zone(self.zone)

    @property
    def bucket(self) -> str:
        return self.bucket_override or default_bucket_name(self.project, self.cluster)

    @property
    def cluster_path(self) -> str:
        return cluster_name(self.project, self.zone, self.cluster)

    @property
    def repository_path(self) -> str:
        return f"projects/{self.project}/locations/{self.region}/repositories/{self.repository}"

    def account_id(self, role: str) -> str:
        """A service account id (6 to 30 characters) unique to this cluster and role."""
        stem = re.sub(r"[^a-z0-9-]", "-", f"kn-{self.cluster}")[: 29 - len(role)].rstrip("-")
        return f"{stem}-{role}"

    def account(self, role: str) -> str:
        """The email of the ``nodes``, ``build`` or ``jobs`` service account."""
        return f"{self.account_id(role)}@{self.project}.iam.gserviceaccount.com"

    @property
    def workload_pool(self) -> str:
        return f"{self.project}.svc.id.goog"

    @property
    def ksa_member(self) -> str:
        """The Workload Identity member that is the Kubernetes service account."""
        return f"serviceAccount:{self.workload_pool}[{self.namespace}/{self.ksa}]"
