"""Kueue's API as Kinetic speaks it: the group and version, the labels a workload carries, and
whether a cluster serves Kueue at all.

Kinetic never assumes Kueue: a cluster that serves ``kueue.x-k8s.io`` admits every workload
Kinetic creates through a LocalQueue; one that does not runs them as before.
"""

from __future__ import annotations

from kinetic_gke.k8s import discovery
from kinetic_gke.k8s.connection import ClusterConnection

__all__ = [
    "GROUP",
    "KUEUE_VERSION",
    "MAX_RUN_DURATION",
    "MIN_PARALLELISM",
    "PRIORITY_LABEL",
    "QUEUE_LABEL",
    "VERSION",
    "served_version",
]

GROUP = "kueue.x-k8s.io"
VERSION = "v1beta2"
"""The Kueue API version Kinetic reads and writes (Kueue's storage version since v0.15)."""
KUEUE_VERSION = "v0.17.0"
"""The Kueue release ``kinetic up`` installs and the tests run."""
QUEUE_LABEL = f"{GROUP}/queue-name"
"""On a Job, JobSet or LeaderWorkerSet: the LocalQueue it is admitted through."""
PRIORITY_LABEL = f"{GROUP}/priority-class"
"""On the same: the WorkloadPriorityClass its Workload gets."""
MIN_PARALLELISM = f"{GROUP}/job-min-parallelism"
"""On an Indexed Job: the fewest pods Kueue may admit it with (partial admission)."""
MAX_RUN_DURATION = "provreq.kueue.x-k8s.io/maxRunDurationSeconds"
"""On a flex-start workload: GKE's ``maxRunDurationSeconds``, how long its nodes are held.
Kueue copies annotations of this prefix to the ProvisioningRequest's parameters."""


def served_version(connection: ClusterConnection) -> str | None:
    """The Kueue API version the cluster serves (preferred), or None if it serves none."""
    return discovery.served_version(connection, GROUP)
