"""The simulated LeaderWorkerSet controller (leaderworkerset.x-k8s.io/v1).

For each replica it creates a group of `size` pods named like the real controller's
(`<lws>-<group>` for the leader, `<lws>-<group>-<worker>` for workers) with the real labels and
`LWS_*` environment variables. Only the leader runs its command; workers mirror the leader's
state. Unlike a real LWS (whose pods restart forever), a leader runs once, so a test can watch
a group finish: the leader pod ends Succeeded or Failed and the LWS gets a `Failed` condition
on failure.
"""

from __future__ import annotations

import copy
import hashlib
from typing import Any

from . import podstatus as ps
from .defaults import apply_defaults
from .gc import dependents
from .kubelet import Kubelet
from .resources import LWS, PODS
from .status import now_rfc3339
from .store import ObjectStore

__all__ = ["LWS_LABEL_PREFIX", "LwsController"]

LWS_LABEL_PREFIX = "leaderworkerset.sigs.k8s.io"
_NAME = f"{LWS_LABEL_PREFIX}/name"
_GROUP = f"{LWS_LABEL_PREFIX}/group-index"
_WORKER = f"{LWS_LABEL_PREFIX}/worker-index"


class LwsController:
    """Reconciles every LeaderWorkerSet on each pass of the controller loop."""

    def __init__(self, store: ObjectStore, kubelet: Kubelet) -> None:
        self._store = store
        self._kubelet = kubelet
        self._created: set[tuple[str, int]] = set()

    def sync(self) -> None:
        """One pass over every LeaderWorkerSet."""
        for lws in self._store.live(LWS):
            if not lws["metadata"].get("deletionTimestamp"):
                self._sync(lws)

    def _sync(self, lws: dict[str, Any]) -> None:
        spec = lws.get("spec") or {}
        replicas = int(spec.get("replicas", 1))
        template = spec["leaderWorkerTemplate"]
        size = int(template.get("size", 1))
        uid = lws["metadata"]["uid"]
        for group in range(replicas):
            if (uid, group) not in self._created and self._create_group(lws, template, group, size):
                self._created.add((uid, group))
        pods = dependents(self._store, lws)
        self._store.set_field(lws, "status", self._status(lws, pods, replicas))

    def _status(
        self, lws: dict[str, Any], pods: list[dict[str, Any]], replicas: int
    ) -> dict[str, Any]:
        now = now_rfc3339()
        status = copy.deepcopy(lws.get("status") or {})
        conds = status.get("conditions") or []
        name = lws["metadata"]["name"]
        groups: dict[str, list[dict[str, Any]]] = {}
        for pod in pods:
            groups.setdefault(pod["metadata"]["labels"][_GROUP], []).append(pod)
        phases = {p["metadata"]["name"]: (p.get("status") or {}).get("phase") for p in pods}
        failed = sorted(n for n, phase in phases.items() if phase == "Failed")
        ready_groups = sum(
            1 for members in groups.values() if all(_ready(p) for p in members) and members
        )
        if failed:
            conds = _cond(conds, "Failed", "True", now, "PodFailed", f"pod {failed[0]} failed")
            conds = _cond(
                conds, "Available", "False", now, "GroupFailed", f"group of pod {failed[0]} failed"
            )
            conds = _cond(conds, "Progressing", "False", now, "GroupFailed", "a group failed")
        elif pods and all(phase == "Succeeded" for phase in phases.values()):
            conds = _cond(
                conds,
                "Available",
                "False",
                now,
                "GroupsCompleted",
                "every group's leader ran to completion",
            )
            conds = _cond(conds, "Progressing", "False", now, "GroupsCompleted", "done")
        elif replicas and ready_groups == replicas:
            conds = _cond(
                conds, "Available", "True", now, "AllGroupsReady", "All replicas are ready"
            )
            conds = _cond(conds, "Progressing", "False", now, "Ready", "Replicas are ready")
        else:
            conds = _cond(
                conds, "Progressing", "True", now, "GroupsProgressing", "Replicas are progressing"
            )
            conds = _cond(
                conds, "Available", "False", now, "GroupsProgressing", "Not all replicas are ready"
            )
        status.update(
            replicas=replicas,
            readyReplicas=ready_groups,
            updatedReplicas=replicas,
            hpaPodSelector=f"{_NAME}={name},{_WORKER}=0",
            conditions=conds,
        )
        return status

    def _create_group(
        self, lws: dict[str, Any], template: dict[str, Any], group: int, size: int
    ) -> bool:
        """Create the group's missing pods; False if a name is still held by another owner."""
        meta = lws["metadata"]
        name, ns = meta["name"], meta["namespace"]
        leader_name = f"{name}-{group}"
        group_key = hashlib.sha1(f"{ns}/{leader_name}".encode()).hexdigest()
        for worker in range(size):
            source = template.get("leaderTemplate") if worker == 0 else None
            pod_template = copy.deepcopy(source or template["workerTemplate"])
            pod_name = leader_name if worker == 0 else f"{leader_name}-{worker}"
            existing = self._store.peek(PODS, ns, pod_name)
            if existing is not None:
                refs = existing["metadata"].get("ownerReferences") or []
                if any(ref.get("uid") == meta["uid"] for ref in refs):
                    continue
                return False  # e.g. the pod of a deleted namesake is still terminating
            labels = {
                **((pod_template.get("metadata") or {}).get("labels") or {}),
                _NAME: name,
                _GROUP: str(group),
                _WORKER: str(worker),
                f"{LWS_LABEL_PREFIX}/group-key": group_key,
            }
            annotations = {
                **((pod_template.get("metadata") or {}).get("annotations") or {}),
                f"{LWS_LABEL_PREFIX}/size": str(size),
            }
            if worker:
                annotations[f"{LWS_LABEL_PREFIX}/leader-name"] = leader_name
            spec = pod_template.get("spec") or {}
            spec.update(hostname=pod_name, subdomain=name)
            injected = [
                {"name": "LWS_LEADER_ADDRESS", "value": f"{leader_name}.{name}.{ns}"},
                {"name": "LWS_GROUP_SIZE", "value": str(size)},
                {"name": "LWS_WORKER_INDEX", "value": str(worker)},
            ]
            for container in spec.get("containers") or []:
                container["env"] = injected + list(container.get("env") or [])
            pod: dict[str, Any] = {
                "metadata": {
                    "name": pod_name,
                    "labels": labels,
                    "annotations": annotations,
                    "ownerReferences": [
                        {
                            "apiVersion": LWS.api_version,
                            "kind": LWS.kind,
                            "name": name,
                            "uid": meta["uid"],
                            "controller": True,
                            "blockOwnerDeletion": True,
                        }
                    ],
                },
                "spec": spec,
            }
            apply_defaults(PODS, pod)
            self._store.create(PODS, ns, pod)
            live = self._store.peek(PODS, ns, pod_name)
            assert live is not None
            runtime = self._kubelet.runtime(live)
            runtime.no_restart = True
            if worker:
                runtime.mirror_of = leader_name
        return True


def _ready(pod: dict[str, Any]) -> bool:
    conds = (pod.get("status") or {}).get("conditions") or []
    return any(c["type"] == "Ready" and c["status"] == "True" for c in conds)


def _cond(
    conds: list[dict[str, Any]], kind: str, status: str, now: str, reason: str, message: str
) -> list[dict[str, Any]]:
    """A metav1.Condition (no lastProbeTime, unlike pod and job conditions)."""
    out = ps.set_condition(conds, kind, status, now, reason, message)
    for cond in out:
        cond.pop("lastProbeTime", None)
    return out
