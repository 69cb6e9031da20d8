"""Armed faults: which pods they hit, and how many.

A fault is aimed by namespace, pod name, label selector and/or a predicate over the pod dict;
``times`` (default 1) bounds how many distinct pods it hits, so "the next matching pod" is the
default. A pod once hit stays hit while the fault is armed.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from .selectors import LabelSelector

__all__ = ["FaultKind", "FaultRegistry", "PodFault"]

FaultKind = Literal["image-pull", "oom", "evict", "preempt", "node-loss"]
Obj = dict[str, Any]


@dataclass(eq=False, kw_only=True)
class PodFault:
    """One armed fault; ``hits`` names the pods (``ns/name``) it has hit so far."""

    kind: FaultKind
    namespace: str | None = None
    name: str | None = None
    selector: str | None = None
    where: Callable[[Obj], bool] | None = None
    times: int | None = 1
    after: float = 0.0
    """Seconds after the container starts (kill faults) before the fault strikes."""
    reason: str = ""
    message: str = ""
    hits: list[str] = field(default_factory=list)
    _uids: set[str] = field(default_factory=set, repr=False)

    def __post_init__(self) -> None:
        self._selector = LabelSelector.parse(self.selector)

    def aims_at(self, pod: Obj) -> bool:
        """Whether ``pod`` is one this fault is aimed at (ignoring ``times``)."""
        meta = pod["metadata"]
        if self.namespace is not None and meta.get("namespace") != self.namespace:
            return False
        if self.name is not None and meta.get("name") != self.name:
            return False
        if not self._selector.matches(meta.get("labels") or {}):
            return False
        return self.where is None or bool(self.where(pod))


class FaultRegistry:
    """The armed faults; safe to use from the test thread and the agent's threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._faults: list[PodFault] = []

    def add(self, fault: PodFault) -> PodFault:
        with self._lock:
            self._faults.append(fault)
        return fault

    def remove(self, fault: PodFault) -> None:
        with self._lock:
            self._faults = [f for f in self._faults if f is not fault]

    def clear(self) -> None:
        with self._lock:
            self._faults.clear()

    def claim(self, kinds: tuple[FaultKind, ...], pod: Obj) -> PodFault | None:
        """The first armed fault of ``kinds`` hitting ``pod``, claiming one of its ``times``."""
        uid = pod["metadata"]["uid"]
        with self._lock:
            for fault in self._faults:
                if fault.kind not in kinds or not fault.aims_at(pod):
                    continue
                if uid not in fault._uids:
                    if fault.times is not None and len(fault._uids) >= fault.times:
                        continue
                    fault._uids.add(uid)
                    fault.hits.append(f"{pod['metadata']['namespace']}/{pod['metadata']['name']}")
                return fault
        return None
