"""The batch/v1 Job workload: one Job, one pod, no Kubernetes retries (Kinetic retries)."""

from __future__ import annotations

import contextlib
from datetime import datetime

from kinetic_gke import status
from kinetic_gke.k8s.connection import ClusterConnection, Obj
from kinetic_gke.k8s.errors import AlreadyExists, NotFound
from kinetic_protocol import JobState

__all__ = ["JobWorkload"]


class JobWorkload:
    kind = "Job"
    pod_owner_kind = "Job"

    def create(self, connection: ClusterConnection, body: Obj) -> Obj | None:
        try:
            return connection.read(
                f"creating Job {body['metadata']['name']} in namespace {connection.namespace}",
                connection.batch.create_namespaced_job,
                connection.namespace,
                body,  # the client takes a plain dict as well as its V1Job model
            )
        except AlreadyExists:
            return None

    def get(self, connection: ClusterConnection, name: str) -> Obj | None:
        return connection.read_or_none(
            f"reading Job {name}", connection.batch.read_namespaced_job, name, connection.namespace
        )

    def list_matching(self, connection: ClusterConnection, selector: str) -> list[Obj]:
        listing = connection.read(
            "listing Jobs",
            connection.batch.list_namespaced_job,
            connection.namespace,
            label_selector=selector,
        )
        return list(listing.get("items") or [])

    def delete(self, connection: ClusterConnection, name: str) -> None:
        with contextlib.suppress(NotFound):  # already gone: deleting is idempotent
            connection.send(
                f"deleting Job {name}",
                connection.batch.delete_namespaced_job,
                name,
                connection.namespace,
                propagation_policy="Foreground",
            )

    def needs_pods(self, obj: Obj) -> bool:
        return status.needs_pods(obj)

    def refusing_owners(self, obj: Obj, pods: list[Obj]) -> list[str]:
        return [] if pods else [obj["metadata"]["name"]]

    def state(
        self,
        obj: Obj | None,
        pods: list[Obj],
        *,
        events: list[Obj],
        unschedulable_timeout: float,
        now: datetime | None = None,
    ) -> JobState:
        return status.job_state(
            obj, pods, unschedulable_timeout=unschedulable_timeout, now=now, events=events
        )
