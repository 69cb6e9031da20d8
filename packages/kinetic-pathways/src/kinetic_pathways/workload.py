"""The LeaderWorkerSet workload: create, read, list, stop and delete one slice per job.

The served API version is discovered from the cluster once per connection, so a cluster that
serves a newer LWS version keeps working; a cluster without the CRD gets an error that says how
to install it.
"""

from __future__ import annotations

import contextlib
from datetime import datetime
from typing import Any

from kinetic_gke.k8s import ClusterConnection, Obj
from kinetic_gke.k8s.errors import AlreadyExists, Conflict, NotFound
from kinetic_pathways import status
from kinetic_pathways.manifest import LWS_GROUP
from kinetic_protocol import ConfigError, JobState
from kinetic_protocol.slices import final_annotations

__all__ = ["LWS_INSTALL_HINT", "LeaderWorkerSetWorkload"]

_PLURAL = "leaderworkersets"
_PREFERRED = ("v1", "v1beta1", "v1alpha1")
LWS_INSTALL_HINT = (
    "kubectl apply --server-side -f https://github.com/kubernetes-sigs/lws/releases/download/"
    "v0.8.0/manifests.yaml"
)


class LeaderWorkerSetWorkload:
    kind = "LeaderWorkerSet"
    pod_owner_kind = "StatefulSet"

    def __init__(self) -> None:
        self._versions: dict[int, str] = {}

    def version(self, connection: ClusterConnection) -> str:
        """The LWS API version the cluster serves; a ConfigError if it has no LWS CRD."""
        key = id(connection)
        if key not in self._versions:
            self._versions[key] = self._discover(connection)
        return self._versions[key]

    @staticmethod
    def _discover(connection: ClusterConnection) -> str:
        from kubernetes import client

        apis = client.ApisApi(connection.api_client)
        listing = connection.read("discovering API groups", apis.get_api_versions)
        for group in listing.get("groups") or []:
            if group.get("name") != LWS_GROUP:
                continue
            served = [v.get("version") for v in group.get("versions") or []]
            preferred = (group.get("preferredVersion") or {}).get("version")
            for version in (preferred, *_PREFERRED):
                if version in served:
                    return str(version)
        raise ConfigError(
            f"The cluster has no LeaderWorkerSet API ({LWS_GROUP}), which the pathways "
            "backend runs multi-host jobs with. Install the LeaderWorkerSet controller: "
            f"`{LWS_INSTALL_HINT}` (or run `kinetic up`), then submit again."
        )

    def _call(self, connection: ClusterConnection, doing: str, method: str, *args: Any) -> None:
        fn = getattr(connection.custom, method)
        connection.send(
            doing, fn, LWS_GROUP, self.version(connection), connection.namespace, _PLURAL, *args
        )

    def create(self, connection: ClusterConnection, body: Obj) -> Obj | None:
        version = self.version(connection)
        body = {**body, "apiVersion": f"{LWS_GROUP}/{version}"}
        name = body["metadata"]["name"]
        try:
            return connection.read(
                f"creating LeaderWorkerSet {name} in namespace {connection.namespace}",
                connection.custom.create_namespaced_custom_object,
                LWS_GROUP,
                version,
                connection.namespace,
                _PLURAL,
                body,
            )
        except AlreadyExists:
            return None

    def get(self, connection: ClusterConnection, name: str) -> Obj | None:
        return connection.read_or_none(
            f"reading LeaderWorkerSet {name}",
            connection.custom.get_namespaced_custom_object,
            LWS_GROUP,
            self.version(connection),
            connection.namespace,
            _PLURAL,
            name,
        )

    def list_matching(self, connection: ClusterConnection, selector: str) -> list[Obj]:
        listing = connection.read(
            "listing LeaderWorkerSets",
            connection.custom.list_namespaced_custom_object,
            LWS_GROUP,
            self.version(connection),
            connection.namespace,
            _PLURAL,
            label_selector=selector,
        )
        return list(listing.get("items") or [])

    def stop(
        self,
        connection: ClusterConnection,
        lws: Obj,
        state: JobState,
        log_tails: dict[int, str] | None = None,
    ) -> bool:
        """Record ``state`` (and each host's last output) on the LWS and scale it to no pods,
        in one patch: the slice's hosts stop (no TPU hours burnt) while the object keeps the
        outcome and the logs' ends for every later reader.

        The patch holds only if ``lws`` (as read) is still current: False when the set changed
        meanwhile (re-read it: another reader may have recorded its outcome) or is gone.
        """
        name = lws["metadata"]["name"]
        annotations = final_annotations(state)
        for host, text in (log_tails or {}).items():
            annotations[status.log_tail_key(host)] = text[-status.LOG_TAIL_BYTES :]
        metadata = {
            "annotations": annotations,
            "resourceVersion": lws["metadata"]["resourceVersion"],
        }
        patch = {"metadata": metadata, "spec": {"replicas": 0}}
        try:
            self._call(
                connection,
                f"stopping LeaderWorkerSet {name}",
                "patch_namespaced_custom_object",
                name,
                patch,
            )
        except (Conflict, NotFound):
            return False
        return True

    def record_hosts(self, connection: ClusterConnection, name: str, uids: list[str]) -> None:
        """Record the uid of the pod that runs each host (see ``status.HOST_PODS``)."""
        patch = {"metadata": {"annotations": {status.HOST_PODS: ",".join(uids)}}}
        with contextlib.suppress(NotFound):
            self._call(
                connection,
                f"recording the pods of LeaderWorkerSet {name}",
                "patch_namespaced_custom_object",
                name,
                patch,
            )

    def delete(self, connection: ClusterConnection, name: str) -> None:
        with contextlib.suppress(NotFound):
            connection.send(
                f"deleting LeaderWorkerSet {name}",
                connection.custom.delete_namespaced_custom_object,
                LWS_GROUP,
                self.version(connection),
                connection.namespace,
                _PLURAL,
                name,
                propagation_policy="Foreground",
            )

    def needs_pods(self, obj: Obj) -> bool:
        """A slice's state lives on its pods, unless Kinetic already recorded it."""
        return status.recorded_state(obj) is None

    def refusing_owners(self, obj: Obj, pods: list[Obj]) -> list[str]:
        """The leader StatefulSet, of the set's name, while no pod of the slice exists."""
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
        return status.slice_state(
            obj, pods, events=events, unschedulable_timeout=unschedulable_timeout, now=now
        )
