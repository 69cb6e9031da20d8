"""Deletion with propagation: the garbage collector's part of the API.

Background deletes the owner now and its dependents next pass; Foreground keeps the owner
(with a `foregroundDeletion` finalizer) until its dependents are gone; Orphan strips the
dependents' owner references and leaves them running.
"""

from __future__ import annotations

from typing import Any

from .resources import JOBS, LWS, PODS, ResourceType
from .status import now_rfc3339
from .store import ObjectStore

__all__ = ["dependents", "mark_deleting", "sync_garbage"]


def mark_deleting(store: ObjectStore, pod: dict[str, Any], grace: int | None = None) -> None:
    """Start a graceful pod deletion; the kubelet finishes it once the process is gone."""
    meta = pod["metadata"]
    if meta.get("deletionTimestamp"):
        return
    if grace is None:
        grace = int(pod["spec"].get("terminationGracePeriodSeconds", 30))
    meta["deletionTimestamp"] = now_rfc3339()
    meta["deletionGracePeriodSeconds"] = grace
    store.bump(pod)


def dependents(store: ObjectStore, owner: dict[str, Any]) -> list[dict[str, Any]]:
    """Live pods that name `owner` in their ownerReferences."""
    uid = owner["metadata"]["uid"]
    ns = owner["metadata"]["namespace"]
    return [
        pod
        for pod in store.live(PODS)
        if pod["metadata"]["namespace"] == ns
        and any(ref.get("uid") == uid for ref in pod["metadata"].get("ownerReferences") or [])
    ]


def _finalize_owner(store: ObjectStore, res: ResourceType, owner: dict[str, Any]) -> None:
    meta = owner["metadata"]
    finalizers = meta.get("finalizers") or []
    pods = dependents(store, owner)
    if "orphan" in finalizers:
        for pod in pods:
            refs = [r for r in pod["metadata"]["ownerReferences"] if r["uid"] != meta["uid"]]
            pod["metadata"]["ownerReferences"] = refs
            store.bump(pod)
        pods = []
    elif "foregroundDeletion" in finalizers:
        for pod in pods:
            mark_deleting(store, pod)
    if not pods:
        store.remove(res, meta["namespace"], meta["name"])


def sync_garbage(store: ObjectStore) -> None:
    """One pass: finish pending owner deletions and delete pods whose owners are gone."""
    owners: set[str] = set()
    for res in (JOBS, LWS):
        for owner in store.live(res):
            owners.add(owner["metadata"]["uid"])
            if owner["metadata"].get("deletionTimestamp"):
                _finalize_owner(store, res, owner)
    for pod in store.live(PODS):
        refs = pod["metadata"].get("ownerReferences") or []
        if refs and not any(ref.get("uid") in owners for ref in refs):
            mark_deleting(store, pod)
