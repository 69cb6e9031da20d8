"""Queues and priorities: the names a job is admitted under, and where a waiting job stands.

A job names a queue (``queue=``) and a priority class (``priority=``). On a Kubernetes cluster
with Kueue these are a LocalQueue in the jobs' namespace and a WorkloadPriorityClass; the
``local`` backend keeps the queue name and starts its pending jobs in priority order. The
classes below exist everywhere Kinetic runs (``kinetic up`` makes them on a cluster), so a
program that says ``priority="high"`` runs unchanged on a laptop and on GKE.
"""

import re
from types import MappingProxyType

import msgspec

from kinetic_protocol.errors import ConfigError

__all__ = [
    "DEFAULT_PRIORITY_CLASSES",
    "DEFAULT_QUEUE",
    "QueuePlace",
    "check_queue_name",
    "check_priority_name",
    "ordinal",
]

DEFAULT_QUEUE = "kinetic"
"""The queue of a job that names none: the LocalQueue ``kinetic up`` makes in the namespace."""

DEFAULT_PRIORITY_CLASSES = MappingProxyType({"low": -100, "normal": 0, "high": 100})
"""Priority classes every Kinetic deployment has, by name and value. A job that names no class
runs at 0, as ``normal``; a higher value is admitted first and may preempt a lower one."""

_NAME = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")


def _checked_name(kind: str, value: object, what: str) -> str:
    if not isinstance(value, str):
        raise TypeError(
            f"{kind} must be a str naming {what}, got {type(value).__name__} {value!r}."
        )
    if not _NAME.fullmatch(value):
        raise ConfigError(
            f"{kind}={value!r} is not a valid name for {what}: use lower-case letters, digits "
            "and '-', starting and ending with a letter or digit, at most 63 characters."
        )
    return value


def check_queue_name(value: object) -> str:
    """``queue=`` checked as a Kubernetes object name (a LocalQueue's)."""
    return _checked_name("queue", value, "a queue")


def check_priority_name(value: object) -> str:
    """``priority=`` checked as a Kubernetes object name (a WorkloadPriorityClass's)."""
    return _checked_name("priority", value, "a priority class")


def ordinal(number: int) -> str:
    """``1st``, ``2nd``, ``3rd``, ``11th``..."""
    if 10 <= number % 100 <= 20:
        suffix = "th"
    else:
        suffix = {1: "st", 2: "nd", 3: "rd"}.get(number % 10, "th")
    return f"{number}{suffix}"


class QueuePlace(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """Where a job waiting for admission stands: data on its PENDING state, read from Kueue's
    Workload and its visibility API (or the local backend's own queue).

    Quantities are Kubernetes quantities as text (``"16"``, ``"64Gi"``), keyed by resource name
    (``google.com/tpu``, ``nvidia.com/gpu``, ``cpu``); only the resources the job waits for.
    """

    queue: str
    """The queue the job was submitted to (a LocalQueue on Kubernetes)."""
    cluster_queue: str = ""
    """The ClusterQueue behind it; empty where there is none (``local``)."""
    position: int | None = None
    """1-based place among the jobs waiting in the cluster queue; None when not known."""
    waiting: int | None = None
    """How many jobs wait in that queue, this one included; None when not known."""
    priority: str = ""
    """The job's priority class; empty for none (value 0)."""
    requested: dict[str, str] = msgspec.field(default_factory=dict)
    """What the job asks for (all its pods together), by resource."""
    quota: dict[str, str] = msgspec.field(default_factory=dict)
    """The cluster queue's nominal quota of those resources."""
    in_use: dict[str, str] = msgspec.field(default_factory=dict)
    """How much of that quota admitted jobs hold now."""
    reason: str = ""
    """Kueue's own words for why it waits (``insufficient unused quota ...``), if any."""

    def describe(self) -> str:
        """``queued in team-a (cluster queue tpu-v5e): 3rd of 7, waiting for 16 google.com/tpu
        (quota 32, 32 in use)``."""
        where = f"queued in {self.queue}"
        if self.cluster_queue:
            where += f" (cluster queue {self.cluster_queue})"
        if self.position is not None:
            where += f": {ordinal(self.position)}"
            if self.waiting is not None:
                where += f" of {self.waiting}"
        needs = []
        for resource, amount in self.requested.items():
            text = f"{amount} {resource}"
            quota, used = self.quota.get(resource), self.in_use.get(resource)
            if quota is not None:
                text += f" (quota {quota}" + (f", {used} in use)" if used is not None else ")")
            needs.append(text)
        if needs:
            where += (
                (", " if self.position is not None else ": ") + "waiting for " + (", ".join(needs))
            )
        return where
