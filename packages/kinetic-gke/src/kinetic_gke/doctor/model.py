"""What a doctor check is and says: PASS, WARN or FAIL, a message, and the exact fix.

Checks share one :class:`Context` so the cluster, the kubeconfig connection and the project's
policies are each read once per run.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from kinetic_gke.provision.clients import GoogleClients
from kinetic_gke.provision.spec import ClusterSpec
from kinetic_protocol import Accelerator

__all__ = ["Check", "Context", "Finding", "Outcome", "fail", "ok", "warn"]

Outcome = Literal["PASS", "WARN", "FAIL"]


@dataclass(frozen=True)
class Finding:
    check: str
    outcome: Outcome
    message: str
    fix: str = ""


def ok(message: str) -> tuple[Outcome, str, str]:
    return ("PASS", message, "")


def warn(message: str, fix: str = "") -> tuple[Outcome, str, str]:
    return ("WARN", message, fix)


def fail(message: str, fix: str) -> tuple[Outcome, str, str]:
    return ("FAIL", message, fix)


class Context:
    """What the checks look at, read once each."""

    def __init__(
        self, spec: ClusterSpec, *, accelerator: Accelerator | None = None, fuse: bool = False
    ) -> None:
        self.spec, self.accelerator, self.fuse = spec, accelerator, fuse
        self.clients = GoogleClients()

    @functools.cached_property
    def cluster(self) -> Any:
        from kinetic_gke.provision.cluster import get_cluster

        return get_cluster(self.spec, self.clients)

    @functools.cached_property
    def connection(self) -> Any:
        """The kubeconfig context Kinetic's backends use (what a job goes through)."""
        from kinetic_gke.provision.incluster import kubeconfig_connection

        return kubeconfig_connection(self.spec)

    @functools.cached_property
    def kueue(self) -> Any:
        """Kueue and the namespace's queues (a ``KueueState``), as the backends see them."""
        from kinetic_gke.provision.kueue_report import read_kueue

        return read_kueue(self.connection, self.spec.namespace)


@dataclass(frozen=True)
class Check:
    name: str
    run: Callable[[Context], tuple[Outcome, str, str]]
