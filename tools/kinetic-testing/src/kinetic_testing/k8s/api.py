"""The REST verbs on stored objects: create, get, list, delete and delete-collection.

This is the API server's half of the simulator (admission, defaulting, propagation policies,
list documents); `server.py` only turns HTTP into calls here and results back into HTTP.
"""

from __future__ import annotations

import base64
import copy
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .defaults import apply_defaults
from .gc import mark_deleting
from .kubelet import Kubelet
from .resources import JOBS, PODS, ResourceType
from .selectors import LabelSelector, SelectorError
from .status import ApiError, now_rfc3339, success_status
from .store import ObjectStore
from .validation import ValidationFailure, Validator

__all__ = ["Api", "Result"]

_ORPHAN_WARNING = (
    '299 - "child pods are preserved by default when jobs are deleted; '
    'set propagationPolicy=Background to remove them"'
)
_POLICIES = ("Foreground", "Background", "Orphan")


@dataclass
class Result:
    """An HTTP-ready outcome: status code, JSON body and extra headers."""

    code: int
    body: Any
    headers: dict[str, str] = field(default_factory=dict)


class Api:
    """Verbs over the store, with admission checks on every write."""

    def __init__(
        self,
        store: ObjectStore,
        validator: Validator,
        kubelet: Kubelet,
        on_invalid: Callable[[ValidationFailure], None],
    ) -> None:
        self._store = store
        self._validator = validator
        self._kubelet = kubelet
        self._on_invalid = on_invalid

    def create(self, res: ResourceType, namespace: str, body: Any) -> Result:
        """POST: admit, default and store; 201 with the stored object."""
        if not isinstance(body, dict):
            raise ApiError.bad_request(f"the request body must be a JSON object, got {body!r:.80}")
        for key, expected in (("apiVersion", res.api_version), ("kind", res.kind)):
            sent = body.setdefault(key, expected)
            if sent != expected:
                raise ApiError.bad_request(
                    f"the {key} in the data ({sent}) does not match the expected {key} "
                    f"({expected}) for {res.plural}"
                )
        meta = body.get("metadata") or {}
        if meta.get("namespace") not in (None, namespace):
            raise ApiError.bad_request(
                f"the namespace of the provided object ({meta['namespace']}) does not match "
                f"the namespace sent on the request ({namespace})"
            )
        causes = self._validator.check(res, body)
        if meta.get("resourceVersion"):
            causes.append(("metadata.resourceVersion", "Invalid value: must not be set on create"))
        if causes:
            name = str(meta.get("name") or meta.get("generateName") or "")
            self._on_invalid(
                ValidationFailure(
                    res.kind, namespace, name, tuple(f"{f}: {m}" for f, m in causes), body
                )
            )
            raise ApiError.invalid(res.kind, res.group, name, causes)
        body = copy.deepcopy(body)
        for server_owned in ("uid", "creationTimestamp", "deletionTimestamp", "generation"):
            body["metadata"].pop(server_owned, None)
        stored = self._store.create(res, namespace, body, lambda obj: apply_defaults(res, obj))
        return Result(201, stored)

    def get(self, res: ResourceType, namespace: str, name: str) -> Result:
        """GET one object (also serves the `/status` subresource)."""
        return Result(200, self._store.get(res, namespace, name))

    def list_collection(
        self, res: ResourceType, namespace: str | None, query: dict[str, str]
    ) -> Result:
        """GET a collection: label/field selectors, `limit` and `continue`."""
        if query.get("watch") in ("true", "1"):
            raise ApiError.bad_request(
                "the simulator does not implement watch; poll with LIST instead"
            )
        items = self._select(res, namespace, query)
        meta: dict[str, Any] = {"resourceVersion": self._store.revision}
        start = _decode_continue(query.get("continue"))
        limit = int(query.get("limit") or 0)
        if start or limit:
            end = start + limit if limit else len(items)
            if end < len(items):
                meta["continue"] = base64.b64encode(str(end).encode()).decode()
                meta["remainingItemCount"] = len(items) - end
            items = items[start:end]
        return Result(200, self._list_document(res, items, meta))

    def _list_document(
        self, res: ResourceType, items: list[dict[str, Any]], meta: dict[str, Any]
    ) -> dict[str, Any]:
        if res.builtin:
            for item in items:
                item.pop("apiVersion", None)
                item.pop("kind", None)
        return {
            "apiVersion": res.api_version,
            "kind": res.list_kind,
            "metadata": meta,
            "items": items,
        }

    def _select(
        self, res: ResourceType, namespace: str | None, query: dict[str, str]
    ) -> list[dict[str, Any]]:
        try:
            selector = LabelSelector.parse(query.get("labelSelector"))
        except SelectorError as exc:
            raise ApiError.bad_request(str(exc)) from None
        items = self._store.list(res, namespace, selector)
        for clause in filter(None, (query.get("fieldSelector") or "").split(",")):
            key, sep, value = clause.partition("=")
            negate = key.endswith("!")
            key = key.rstrip("!=")
            getters: dict[str, Callable[[dict[str, Any]], Any]] = {
                "metadata.name": lambda o: o["metadata"]["name"],
                "metadata.namespace": lambda o: o["metadata"]["namespace"],
                "status.phase": lambda o: (o.get("status") or {}).get("phase"),
            }
            if not sep or key not in getters:
                raise ApiError.bad_request(
                    f'"{clause}" is not a field selector the simulator supports; use one of '
                    f"{sorted(getters)} with = or !="
                )
            value = value.lstrip("=")
            items = [o for o in items if (getters[key](o) == value) != negate]
        return items

    def delete(
        self, res: ResourceType, namespace: str, name: str, query: dict[str, str], body: Any
    ) -> Result:
        """DELETE one object with the requested propagation policy."""
        options = {**query, **(body if isinstance(body, dict) else {})}
        policy = options.get("propagationPolicy")
        if policy is not None and policy not in _POLICIES:
            raise ApiError.invalid(
                "DeleteOptions",
                "meta.k8s.io",
                "",
                [("propagationPolicy", f'Unsupported value: "{policy}": supported {_POLICIES}')],
            )
        if options.get("dryRun"):
            raise ApiError.bad_request("the simulator does not implement dryRun; drop it")
        grace = options.get("gracePeriodSeconds")
        with self._store.lock:
            obj = self._store.peek(res, namespace, name)
            if obj is None:
                raise ApiError.not_found(res.plural, res.group, name)
            snapshot = copy.deepcopy(obj)
            if obj["metadata"].get("deletionTimestamp"):
                return Result(202, snapshot)
            if res is PODS:
                return self._delete_pod(obj, None if grace is None else int(grace))
            headers: dict[str, str] = {}
            if policy is None:
                # batch/v1 Jobs still orphan their pods by default, with a warning.
                policy = "Orphan" if res is JOBS else "Background"
                if res is JOBS:
                    headers["Warning"] = _ORPHAN_WARNING
            if policy == "Background":
                self._store.remove(res, namespace, name)
                details = {
                    "name": name,
                    "group": res.group,
                    "kind": res.plural,
                    "uid": obj["metadata"]["uid"],
                }
                return Result(200, success_status(details), headers)
            obj["metadata"]["deletionTimestamp"] = now_rfc3339()
            obj["metadata"]["deletionGracePeriodSeconds"] = 0
            finalizer = "foregroundDeletion" if policy == "Foreground" else "orphan"
            obj["metadata"]["finalizers"] = [*obj["metadata"].get("finalizers", []), finalizer]
            self._store.bump(obj)
            return Result(202, copy.deepcopy(obj), headers)

    def _delete_pod(self, pod: dict[str, Any], grace: int | None) -> Result:
        rt = self._kubelet.peek_runtime(pod["metadata"]["uid"])
        alive = rt is not None and rt.process is not None and rt.process.proc.poll() is None
        mark_deleting(self._store, pod, grace)
        snapshot = copy.deepcopy(pod)
        if not alive:
            # Nothing to stop (never started, or already finished): gone at once.
            meta = pod["metadata"]
            self._store.remove(PODS, meta["namespace"], meta["name"])
        return Result(200, snapshot)

    def delete_collection(
        self, res: ResourceType, namespace: str, query: dict[str, str], body: Any
    ) -> Result:
        """DELETE a collection: every selected object, with the same options."""
        with self._store.lock:
            items = self._select(res, namespace, query)
            options = {
                k: v for k, v in query.items() if k not in ("labelSelector", "fieldSelector")
            }
            headers: dict[str, str] = {}
            for item in items:
                result = self.delete(res, namespace, item["metadata"]["name"], options, body)
                headers.update(result.headers)
            meta = {"resourceVersion": self._store.revision}
            return Result(200, self._list_document(res, items, meta), headers)


def _decode_continue(token: str | None) -> int:
    if not token:
        return 0
    try:
        return int(base64.b64decode(token).decode())
    except ValueError:
        raise ApiError(
            410,
            f"the continue token {token!r} is not valid; start the LIST again",
            reason="Expired",
        ) from None
