"""The workload seam: what a backend runs a job as (a Job, a LeaderWorkerSet...).

A workload builds the object for a record, creates, reads, lists and deletes it through a
:class:`~kinetic_gke.k8s.connection.ClusterConnection`, and maps it with its pods to a
``JobState``. Everything else a Kubernetes backend does (polling, logs, deletion with
confirmation, listing by label) is the same for every workload.
"""

from __future__ import annotations

from datetime import datetime
from typing import Protocol

from kinetic_gke.k8s.connection import ClusterConnection, Obj
from kinetic_protocol import JobState

__all__ = ["Workload"]


class Workload(Protocol):
    """One kind of Kubernetes object that runs a Kinetic job."""

    kind: str
    """For messages and ``kubectl`` hints: ``Job``, ``LeaderWorkerSet``."""
    pod_owner_kind: str
    """The kind whose ``FailedCreate`` events say why no pod appears (a LeaderWorkerSet's
    pods are created by its leader StatefulSet, of the same name)."""

    def create(self, connection: ClusterConnection, body: Obj) -> Obj | None:
        """Create it and return it as created; None if one of that name exists already (an
        idempotent resubmit)."""
        ...

    def get(self, connection: ClusterConnection, name: str) -> Obj | None: ...

    def list_matching(self, connection: ClusterConnection, selector: str) -> list[Obj]: ...

    def delete(self, connection: ClusterConnection, name: str) -> None:
        """Delete it and its pods (foreground); already gone is fine."""
        ...

    def needs_pods(self, obj: Obj) -> bool:
        """Whether the object alone cannot explain the state (a reason lives on its pods)."""
        ...

    def refusing_owners(self, obj: Obj, pods: list[Obj]) -> list[str]:
        """The objects (of ``pod_owner_kind``) whose ``FailedCreate`` events may say why
        ``obj`` lacks pods it should have by now; none when ``pods`` are all it needs."""
        ...

    def state(
        self,
        obj: Obj | None,
        pods: list[Obj],
        *,
        events: list[Obj],
        unschedulable_timeout: float,
        now: datetime | None = None,
    ) -> JobState: ...
