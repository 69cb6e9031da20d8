"""The pre-flight check on submit: can any node of the cluster ever run this accelerator?

Without it a job whose accelerator no pool offers sits PENDING until
``KINETIC_UNSCHEDULABLE_TIMEOUT`` (15 minutes) before failing. The answer comes from two
sources, cheapest first:

1. the registered nodes, listed by the job's own node selector (GKE labels every node with its
   pool, accelerator, TPU topology and machine type), which needs only the Kubernetes API;
2. the GKE API's cluster configuration, which also knows pools scaled to zero nodes and what
   node auto-provisioning may create.

Each accelerator is checked once per backend (so once per process: backends are built once per
session). Where neither source can be read (no permission to list nodes or read the cluster,
no Google credentials, a cluster GKE does not know) the check says so once and lets the job
through: it never blocks a job that might run.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass

from kinetic_gke.gcp import ClusterView
from kinetic_gke.k8s import KubeApiError, Obj
from kinetic_gke.pools import node_serves, pool_serves
from kinetic_gke.scheduling import scheduling_for
from kinetic_protocol import Accelerator, ConfigError, KineticError

__all__ = ["CapacityCheck", "ClusterRef", "Verdict", "pool_add_command"]

_log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ClusterRef:
    project: str
    zone: str
    cluster: str


@dataclass(frozen=True)
class Verdict:
    """``runnable``: True, False, or None when neither source could be read."""

    runnable: bool | None
    reason: str


def pool_add_command(
    accelerator: Accelerator,
    where: ClusterRef,
    *,
    spot: bool = False,
    reservation: str = "",
    flex_start: bool = False,
) -> str:
    """The command that adds a pool for ``accelerator`` to the cluster ``where``."""
    return (
        f"kinetic pool add --accelerator {accelerator.name}"
        + (" --spot" if spot else "")
        + (f" --reservation {reservation}" if reservation else "")
        + (" --flex-start" if flex_start else "")
        + f" --project {where.project} --zone {where.zone} --cluster {where.cluster}"
    )


class CapacityCheck:
    """Answers "can this accelerator ever run here?" once per accelerator and spot choice.

    ``list_nodes(selector)`` lists the cluster's nodes by label selector; ``read_cluster()``
    returns the GKE API's view (None: GKE has no such cluster). Either may raise a
    ``KineticError`` when it cannot be read.
    """

    def __init__(
        self,
        where: ClusterRef,
        *,
        list_nodes: Callable[[str], list[Obj]],
        read_cluster: Callable[[], ClusterView | None],
    ) -> None:
        self.where = where
        self._list_nodes = list_nodes
        self._read_cluster = read_cluster
        self._verdicts: dict[tuple[str, bool, str, bool], Verdict] = {}
        self._lock = threading.Lock()

    def verdict(
        self,
        accelerator: Accelerator,
        *,
        spot: bool = False,
        reservation: str = "",
        flex_start: bool = False,
    ) -> Verdict:
        key = (accelerator.name, spot, reservation, flex_start)
        with self._lock:
            if key not in self._verdicts:
                self._verdicts[key] = self._decide(accelerator, spot, reservation, flex_start)
            return self._verdicts[key]

    def require(
        self,
        accelerator: Accelerator,
        *,
        spot: bool = False,
        reservation: str = "",
        flex_start: bool = False,
    ) -> None:
        """Raise a ConfigError (with the ``kinetic pool add`` command) if the accelerator can
        never run (on spot, on ``reservation``, or through flex-start); warn once and return if
        that cannot be told."""
        first = (accelerator.name, spot, reservation, flex_start) not in self._verdicts
        found = self.verdict(accelerator, spot=spot, reservation=reservation, flex_start=flex_start)
        if found.runnable is False:
            raise ConfigError(found.reason)
        if found.runnable is None and first:
            _log.warning(found.reason)

    def _decide(
        self, accelerator: Accelerator, spot: bool, reservation: str, flex_start: bool
    ) -> Verdict:
        if accelerator.category == "cpu" and not spot and not reservation and not flex_start:
            return Verdict(True, "cpu jobs run on any node")
        problems = []
        placed = scheduling_for(
            accelerator, spot=spot, reservation=reservation, flex_start=flex_start
        )
        try:
            selector = ",".join(f"{k}={v}" for k, v in placed.node_selector.items())
            nodes = self._list_nodes(selector)
        except KubeApiError as exc:
            problems.append(f"listing the cluster's nodes failed ({exc.reason or exc.status})")
        else:
            serving = [
                n
                for n in nodes
                if node_serves(
                    n, accelerator, spot=spot, reservation=reservation, flex_start=flex_start
                )
            ]
            if serving:
                return Verdict(True, f"node {serving[0]['metadata']['name']} offers it")
        try:
            cluster = self._read_cluster()
        except KineticError as exc:
            problems.append(f"reading the cluster's node pools failed: {exc}")
            cluster = None
        else:
            if cluster is None:
                problems.append(
                    f"the GKE API has no cluster {self.where.cluster} in {self.where.zone} of "
                    f"project {self.where.project}"
                )
        kind = _kind(spot, reservation, flex_start)
        if cluster is not None:
            return self._from_config(cluster, accelerator, spot, reservation, flex_start)
        return Verdict(
            None,
            f"kinetic: could not check that cluster {self.where.cluster} has a node pool for "
            f"{accelerator.name}{f' ({kind})' if kind else ''}: {'; '.join(problems)}. Submitting "
            "anyway; if the job stays PENDING (Unschedulable), `kinetic doctor --accelerator "
            f"{accelerator.name}` tells why.",
        )

    def _from_config(
        self,
        cluster: ClusterView,
        accelerator: Accelerator,
        spot: bool,
        reservation: str,
        flex_start: bool,
    ) -> Verdict:
        for pool in cluster.pools:
            if pool_serves(
                pool, accelerator, spot=spot, reservation=reservation, flex_start=flex_start
            ):
                return Verdict(True, f"node pool {pool.name} can scale to it")
        provisioned = not reservation and not flex_start  # by a pool of Kinetic's only
        if provisioned and cluster.autoprovisioning.can_create(accelerator):
            return Verdict(True, "node auto-provisioning can create a pool for it")
        kind = _kind(spot, reservation, flex_start)
        kind = f"{kind} " if kind else ""
        command = pool_add_command(
            accelerator, self.where, spot=spot, reservation=reservation, flex_start=flex_start
        )
        return Verdict(
            False,
            f"No node pool of cluster {self.where.cluster} can run {accelerator.name} on "
            f"{kind}nodes: no node offers it, no pool can scale to one, and node "
            "auto-provisioning cannot create one, so the job would wait PENDING until it times "
            f"out. Add a pool, then submit again: `{command}`",
        )


def _kind(spot: bool, reservation: str, flex_start: bool) -> str:
    """The kind of capacity in words; empty for on-demand."""
    if spot:
        return "spot"
    if flex_start:
        return "flex-start"
    return f"reservation {reservation}" if reservation else ""
