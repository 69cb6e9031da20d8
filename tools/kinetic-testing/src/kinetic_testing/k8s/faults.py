"""Injectable faults: the failures a GKE cluster produces, on demand and per pod.

Pod faults pick their pods by owner name (`job_name`: a Job's or a LeaderWorkerSet's name), by a
label selector over pod labels, and/or by namespace; `times=1` makes a fault one-shot (only the
first matching pod is hit, so a retry succeeds). API faults act on HTTP requests.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any, Literal

from .selectors import LabelSelector

__all__ = [
    "ApiFailure",
    "ApiFault",
    "Eviction",
    "Fault",
    "FaultRegistry",
    "ImagePullFailure",
    "NodeLoss",
    "OOMKill",
    "PodFault",
    "Preemption",
    "SlowApi",
    "Unschedulable",
]

_OWNER_LABELS = ("batch.kubernetes.io/job-name", "job-name", "leaderworkerset.sigs.k8s.io/name")


@dataclass(kw_only=True, eq=False)
class PodFault:
    """Base of all pod faults: which pods it hits. `hits` lists the pod names it hit."""

    job_name: str | None = None
    selector: str | None = None
    namespace: str | None = None
    #: How many distinct pods the fault may hit; None means every matching pod.
    times: int | None = None
    hits: list[str] = field(default_factory=list, init=False)
    _first_hit: dict[str, float] = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self) -> None:
        self._selector = LabelSelector.parse(self.selector)

    def seconds_since_hit(self, uid: str) -> float:
        """How long ago this fault first hit the pod with `uid` (0 if it never did)."""
        first = self._first_hit.get(uid)
        return 0.0 if first is None else time.monotonic() - first

    def matches(self, pod: dict[str, Any]) -> bool:
        """Whether the pod is one this fault is aimed at (ignoring `times`)."""
        meta = pod["metadata"]
        labels = meta.get("labels") or {}
        if self.namespace is not None and meta.get("namespace") != self.namespace:
            return False
        if self.job_name is not None and self.job_name not in (
            labels.get(key) for key in _OWNER_LABELS
        ):
            return False
        return self._selector.matches(labels)


@dataclass(kw_only=True, eq=False)
class ImagePullFailure(PodFault):
    """The image cannot be pulled: the pod stays Pending, `ErrImagePull` / `ImagePullBackOff`.

    `duration` (seconds) makes the pull succeed after that long, like a transient registry error.
    """

    image: str | None = None
    duration: float | None = None


@dataclass(kw_only=True, eq=False)
class Unschedulable(PodFault):
    """No node fits: the pod stays Pending with `PodScheduled=False`, reason `Unschedulable`.

    `duration` (seconds) lets it schedule after that long, as when the autoscaler adds a node.
    """

    message: str = (
        "0/3 nodes are available: 3 Insufficient nvidia.com/gpu. preemption: 0/3 nodes are "
        "available: 3 No preemption victims found for incoming pod."
    )
    duration: float | None = None


@dataclass(kw_only=True, eq=False)
class OOMKill(PodFault):
    """The container is killed for exceeding memory, `after` seconds into running (exit 137)."""

    after: float = 0.0


@dataclass(kw_only=True, eq=False)
class Eviction(PodFault):
    """Node-pressure eviction by the kubelet: phase Failed, reason `Evicted`."""

    after: float = 0.0
    message: str = (
        "The node was low on resource: memory. Threshold quantity: 100Mi, available: 42Mi."
    )


@dataclass(kw_only=True, eq=False)
class Preemption(PodFault):
    """Spot reclaim (`by="node-shutdown"`: Failed, DisruptionTarget `TerminationByKubelet`) or
    scheduler preemption (`by="scheduler"`: DisruptionTarget `PreemptionByScheduler`, pod deleted).
    """

    after: float = 0.0
    by: Literal["node-shutdown", "scheduler"] = "node-shutdown"


@dataclass(kw_only=True, eq=False)
class NodeLoss(PodFault):
    """The pod's node vanishes: the process dies; the pod goes Failed with DisruptionTarget
    `DeletionByPodGC` (or `Unknown` if `phase="Unknown"`), and is deleted if `delete_pod`.
    """

    after: float = 0.0
    phase: Literal["Failed", "Unknown"] = "Failed"
    delete_pod: bool = False


@dataclass(kw_only=True, eq=False)
class ApiFault:
    """Base of request faults: which requests they affect (method and path substring)."""

    method: str | None = None
    path_contains: str | None = None
    hits: int = field(default=0, init=False)

    def matches(self, method: str, path: str) -> bool:
        """Whether this fault applies to the request."""
        return (self.method is None or self.method.upper() == method) and (
            self.path_contains is None or self.path_contains in path
        )


@dataclass(kw_only=True, eq=False)
class SlowApi(ApiFault):
    """Every matching request is answered `delay_ms` milliseconds late."""

    delay_ms: int


@dataclass(kw_only=True, eq=False)
class ApiFailure(ApiFault):
    """Matching requests fail with `code` (a Status body); `times=None` means always."""

    code: int = 500
    message: str = "simulated API server failure (injected by the test)"
    times: int | None = 1


Fault = PodFault | ApiFault


class FaultRegistry:
    """The faults in force; every method is safe to call from any thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._faults: list[Fault] = []

    def add(self, fault: Fault) -> None:
        """Put a fault in force."""
        if not isinstance(fault, PodFault | ApiFault):
            raise TypeError(f"not a fault: {fault!r}; use one of {__all__}")
        with self._lock:
            self._faults.append(fault)

    def remove(self, fault: Fault) -> None:
        """Lift a fault; a stalled pod proceeds on the controller's next pass."""
        with self._lock:
            self._faults = [f for f in self._faults if f is not fault]

    def clear(self) -> None:
        """Lift every fault."""
        with self._lock:
            self._faults.clear()

    def active(self) -> list[Fault]:
        """The faults in force, oldest first."""
        with self._lock:
            return list(self._faults)

    def pod_fault(self, kinds: tuple[type[PodFault], ...], pod: dict[str, Any]) -> PodFault | None:
        """The first fault of `kinds` that hits `pod`, claiming one of its `times` if new.

        A pod once hit stays hit (until `duration` runs out for stalling faults), so a
        Pending pod keeps its symptom across passes.
        """
        uid = pod["metadata"]["uid"]
        now = time.monotonic()
        with self._lock:
            for fault in self._faults:
                if not isinstance(fault, kinds) or not fault.matches(pod):
                    continue
                if uid not in fault._first_hit:
                    if fault.times is not None and len(fault._first_hit) >= fault.times:
                        continue
                    fault._first_hit[uid] = now
                    fault.hits.append(pod["metadata"]["name"])
                duration = getattr(fault, "duration", None)
                if duration is not None and now - fault._first_hit[uid] >= duration:
                    continue
                return fault
        return None

    def for_request(self, method: str, path: str) -> tuple[float, ApiFailure | None]:
        """The total delay (seconds) and the failure, if any, for one request."""
        delay = 0.0
        failure: ApiFailure | None = None
        with self._lock:
            for fault in self._faults:
                if not isinstance(fault, ApiFault) or not fault.matches(method, path):
                    continue
                if isinstance(fault, SlowApi):
                    fault.hits += 1
                    delay += fault.delay_ms / 1000
                elif isinstance(fault, ApiFailure) and failure is None:
                    if fault.times is not None and fault.hits >= fault.times:
                        continue
                    fault.hits += 1
                    failure = fault
        return delay, failure
