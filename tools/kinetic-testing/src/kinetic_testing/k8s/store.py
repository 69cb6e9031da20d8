"""The simulator's etcd: namespaced objects kept as JSON-shaped dicts under one lock.

Readers get deep copies; the controllers mutate live objects while holding `lock` and report
each change through `bump`/`set_field`, which advance the resourceVersion like a real write.
"""

from __future__ import annotations

import copy
import random
import threading
import uuid
from collections.abc import Callable, Iterable
from typing import Any

from .resources import ResourceType
from .selectors import LabelSelector
from .status import ApiError, now_rfc3339

__all__ = ["ObjectStore", "random_suffix"]

# The alphabet Kubernetes uses for generated names: no vowels, no confusable characters.
_NAME_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
_MAX_GENERATED_BASE = 58


def random_suffix(length: int = 5) -> str:
    """Five characters like the ones the API server appends to `generateName`."""
    return "".join(random.choice(_NAME_ALPHABET) for _ in range(length))


class ObjectStore:
    """All objects of all served resource types, with a global resourceVersion counter."""

    def __init__(self, namespaces: Iterable[str]) -> None:
        self.lock = threading.RLock()
        #: Set on every write so the controller loop wakes without waiting for its tick.
        self.changed = threading.Event()
        self.namespaces: set[str] = set(namespaces)
        self._objects: dict[str, dict[tuple[str, str], dict[str, Any]]] = {}
        self._revision = 0

    # -- writes -----------------------------------------------------------------------------

    def _next_revision(self) -> str:
        self._revision += 1
        self.changed.set()
        return str(self._revision)

    def create(
        self,
        res: ResourceType,
        namespace: str,
        obj: dict[str, Any],
        prepare: Callable[[dict[str, Any]], None] | None = None,
    ) -> dict[str, Any]:
        """Store a new object, filling the server-owned metadata; returns a copy.

        `prepare` runs once the object has its name and uid, before it becomes visible.
        """
        with self.lock:
            if namespace not in self.namespaces:
                raise ApiError.not_found("namespaces", "", namespace)
            table = self._objects.setdefault(res.plural, {})
            meta = obj.setdefault("metadata", {})
            if not meta.get("name") and meta.get("generateName"):
                base = str(meta["generateName"])[:_MAX_GENERATED_BASE]
                meta["name"] = base + random_suffix()
            name = str(meta["name"])
            if (namespace, name) in table:
                raise ApiError.already_exists(res.plural, res.group, name)
            obj["apiVersion"] = res.api_version
            obj["kind"] = res.kind
            meta["namespace"] = namespace
            meta["uid"] = str(uuid.uuid4())
            meta["creationTimestamp"] = now_rfc3339()
            meta["generation"] = 1
            if prepare is not None:
                prepare(obj)
            meta["resourceVersion"] = self._next_revision()
            table[(namespace, name)] = obj
            return copy.deepcopy(obj)

    def bump(self, obj: dict[str, Any]) -> None:
        """Record that a live object was changed in place (new resourceVersion)."""
        obj["metadata"]["resourceVersion"] = self._next_revision()

    def set_field(self, obj: dict[str, Any], key: str, value: Any) -> bool:
        """Set `obj[key]` and bump the version only if the value actually changed."""
        if obj.get(key) == value:
            return False
        obj[key] = value
        self.bump(obj)
        return True

    def remove(self, res: ResourceType, namespace: str, name: str) -> dict[str, Any] | None:
        """Drop an object for good (after finalization); returns it, or None if absent."""
        with self.lock:
            obj = self._objects.get(res.plural, {}).pop((namespace, name), None)
            if obj is not None:
                self._next_revision()
            return obj

    # -- reads ------------------------------------------------------------------------------

    def get(self, res: ResourceType, namespace: str, name: str) -> dict[str, Any]:
        """A copy of one object, or a 404 ApiError."""
        with self.lock:
            obj = self.peek(res, namespace, name)
            if obj is None:
                raise ApiError.not_found(res.plural, res.group, name)
            return copy.deepcopy(obj)

    def peek(self, res: ResourceType, namespace: str, name: str) -> dict[str, Any] | None:
        """The live object (no copy): only for callers that hold `lock`."""
        return self._objects.get(res.plural, {}).get((namespace, name))

    def live(self, res: ResourceType) -> list[dict[str, Any]]:
        """Live objects of one type in key order: only for callers that hold `lock`."""
        table = self._objects.get(res.plural, {})
        return [table[key] for key in sorted(table)]

    def list(
        self,
        res: ResourceType,
        namespace: str | None = None,
        selector: LabelSelector | None = None,
    ) -> list[dict[str, Any]]:
        """Copies of the objects in `namespace` (all if None) whose labels match `selector`."""
        selector = selector or LabelSelector()
        with self.lock:
            return [
                copy.deepcopy(obj)
                for obj in self.live(res)
                if (namespace is None or obj["metadata"]["namespace"] == namespace)
                and selector.matches(obj["metadata"].get("labels"))
            ]

    @property
    def revision(self) -> str:
        """The latest resourceVersion handed out (what a LIST reports)."""
        with self.lock:
            return str(self._revision)
