"""The JobSet workload: one JobSet per job on several hosts (``jobset.x-k8s.io/v1alpha2``).

Deleting a set in the foreground takes its Jobs, their pods and its headless service with it
(JobSet makes itself their controller owner).
"""

from __future__ import annotations

import contextlib
from datetime import datetime
from typing import Any

from kinetic_gke import jobset_status
from kinetic_gke.jobsets import JOBSET_GROUP, JOBSET_VERSION
from kinetic_gke.k8s.connection import ClusterConnection, Obj
from kinetic_gke.k8s.errors import AlreadyExists, NotFound
from kinetic_protocol import ConfigError, JobState

__all__ = ["JOBSET_INSTALL_HINT", "JobSetWorkload"]

_PLURAL = "jobsets"
JOBSET_INSTALL_HINT = (
    "kubectl apply --server-side -f https://github.com/kubernetes-sigs/jobset/releases/download/"
    "v0.11.1/manifests.yaml"
)


class JobSetWorkload:
    kind = "JobSet"
    pod_owner_kind = "Job"

    def _args(self, connection: ClusterConnection) -> tuple[Any, ...]:
        return (JOBSET_GROUP, JOBSET_VERSION, connection.namespace, _PLURAL)

    def create(self, connection: ClusterConnection, body: Obj) -> Obj | None:
        name = body["metadata"]["name"]
        try:
            return connection.read(
                f"creating JobSet {name} in namespace {connection.namespace}",
                connection.custom.create_namespaced_custom_object,
                *self._args(connection),
                body,
            )
        except AlreadyExists:
            return None
        except NotFound:
            raise ConfigError(
                f"The cluster serves no JobSet API ({JOBSET_GROUP}/{JOBSET_VERSION}), which "
                "the gke backend runs a job on several hosts (nodes=, slices=) with. Install "
                f"the JobSet controller: `{JOBSET_INSTALL_HINT}` (or run `kinetic up`), then "
                "submit again."
            ) from None

    def get(self, connection: ClusterConnection, name: str) -> Obj | None:
        return connection.read_or_none(
            f"reading JobSet {name}",
            connection.custom.get_namespaced_custom_object,
            *self._args(connection),
            name,
        )

    def list_matching(self, connection: ClusterConnection, selector: str) -> list[Obj]:
        try:
            listing = connection.read(
                "listing JobSets",
                connection.custom.list_namespaced_custom_object,
                *self._args(connection),
                label_selector=selector,
            )
        except NotFound:  # no JobSet API: no JobSets
            return []
        return list(listing.get("items") or [])

    def delete(self, connection: ClusterConnection, name: str) -> None:
        with contextlib.suppress(NotFound):
            connection.send(
                f"deleting JobSet {name}",
                connection.custom.delete_namespaced_custom_object,
                *self._args(connection),
                name,
                propagation_policy="Foreground",
            )

    def needs_pods(self, obj: Obj) -> bool:
        return jobset_status.needs_pods(obj)

    def refusing_owners(self, obj: Obj, pods: list[Obj]) -> list[str]:
        return jobset_status.refusing_jobs(obj, pods)

    def state(
        self,
        obj: Obj | None,
        pods: list[Obj],
        *,
        events: list[Obj],
        unschedulable_timeout: float,
        now: datetime | None = None,
    ) -> JobState:
        return jobset_status.jobset_state(
            obj, pods, events=events, unschedulable_timeout=unschedulable_timeout, now=now
        )
