"""Node pools in the accelerator catalogue's terms: the pool an accelerator needs, and whether
a pool or a node that exists can run it.

One rule serves the pre-flight check on submit (:mod:`kinetic_gke.capacity`), ``kinetic pool
add`` and ``kinetic doctor``, so what Kinetic creates is exactly what it later looks for. The
pools are described by :class:`PoolInfo`, a plain view of a GKE ``NodePool`` that needs no
Google client library.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from kinetic_gke.k8s import Obj
from kinetic_gke.machines import machine_for
from kinetic_gke.scheduling import GPU_RESOURCE, TPU_RESOURCE, scheduling_for
from kinetic_protocol import Accelerator, ConfigError, parse_accelerator
from kinetic_protocol.accelerators import valid_accelerator_names

__all__ = [
    "SPOT_TAINT",
    "Autoprovisioning",
    "PoolHardware",
    "PoolInfo",
    "PoolShape",
    "node_serves",
    "pool_accelerator",
    "pool_name",
    "pool_serves",
    "pool_shape",
]

SPOT_TAINT = ("cloud.google.com/gke-spot", "true")
"""Kinetic's spot pools carry this NoSchedule taint (its spot pods tolerate it), so jobs that
did not ask for spot never land on a VM that can be reclaimed at any moment."""
_MAX_NAME = 40


@dataclass(frozen=True)
class PoolHardware:
    """What each node of a pool has: its machine and the accelerators attached to it."""

    machine_type: str
    gpu_type: str = ""
    gpu_count: int = 0
    tpu_topology: str = ""

    @property
    def tpu(self) -> bool:
        return self.machine_type.startswith(("ct", "tpu"))

    @property
    def label(self) -> str:
        """What it offers, for people: ``2 x nvidia-l4``, ``tpu 2x4``, or ``cpu``."""
        if self.gpu_type:
            return f"{self.gpu_count} x {self.gpu_type}"
        if self.tpu:
            return f"tpu {self.tpu_topology or '(single host)'}"
        return "cpu"


@dataclass(frozen=True)
class PoolShape:
    """The pool one accelerator needs."""

    accelerator: Accelerator
    hardware: PoolHardware
    hosts: int = 1
    """Nodes of one slice: a multi-host TPU pool holds exactly one slice of this many VMs."""

    @property
    def multi_host(self) -> bool:
        return self.hosts > 1


@dataclass(frozen=True)
class PoolInfo:
    """A node pool as the cluster has it (read from the GKE API)."""

    name: str
    hardware: PoolHardware
    spot: bool = False
    autoscaling: bool = False
    min_nodes: int = 0
    max_nodes: int = 0
    node_count: int = 0
    gpu_driver_managed: bool = False
    """GKE installs the NVIDIA driver itself (``gpuDriverInstallationConfig``)."""
    status: str = ""
    reservation: str = ""
    """The Compute Engine reservation its nodes consume (``kinetic pool add --reservation``);
    empty for none."""
    flex_start: bool = False
    """Its nodes come only through provisioning requests (GKE's queued provisioning,
    ``kinetic pool add --flex-start``)."""

    @property
    def capacity(self) -> str:
        """Its kind of capacity, as ``capacity=`` names it: ``spot``, ``flex-start``,
        ``reservation:<name>`` or ``on-demand``."""
        if self.spot:
            return "spot"
        if self.flex_start:
            return "flex-start"
        return f"reservation:{self.reservation}" if self.reservation else "on-demand"

    @property
    def can_have_nodes(self) -> bool:
        """The pool has nodes, or its autoscaler may add some."""
        return self.node_count > 0 or (self.autoscaling and self.max_nodes > 0)

    @property
    def needs_gpu_driver(self) -> bool:
        """A GPU pool whose driver GKE does not install: a driver installer must."""
        return bool(self.hardware.gpu_type) and not self.gpu_driver_managed


@dataclass(frozen=True)
class Autoprovisioning:
    """Node auto-provisioning: whether GKE may create pools, and up to how many of each
    accelerator (GKE's resource type names, ``nvidia-l4``, ``tpu-v5-lite-podslice``)."""

    enabled: bool = False
    accelerator_limits: tuple[tuple[str, int], ...] = ()
    max_cpu: int = 0
    """vCPUs the cluster may have in all (GKE's ``cpu`` resource limit); 0 when none is set."""
    max_memory_gb: int = 0

    def can_create(self, accelerator: Accelerator) -> bool:
        if not self.enabled:
            return False
        if accelerator.category == "cpu":
            return True
        limit = dict(self.accelerator_limits).get(accelerator.k8s_accelerator, 0)
        return limit >= accelerator.count


def pool_accelerator(pool: PoolInfo) -> Accelerator | None:
    """The largest accelerator of the catalogue one node (a TPU pool: its slice) of ``pool``
    runs, whose scheduling terms are what the pool's nodes carry; None for a CPU pool or
    hardware the catalogue does not have."""
    hardware = pool.hardware
    if not hardware.gpu_type and not hardware.tpu:
        return None
    best: Accelerator | None = None
    for name in valid_accelerator_names():
        candidate = parse_accelerator(name)
        if hardware.gpu_type:
            fits = (
                candidate.category == "gpu"
                and candidate.k8s_accelerator == hardware.gpu_type
                and candidate.count <= hardware.gpu_count
            )
        else:
            fits = candidate.machine_type == hardware.machine_type and (
                candidate.topology == hardware.tpu_topology
                if hardware.tpu_topology
                else not candidate.multi_host
            )
        if fits and (best is None or candidate.count > best.count):
            best = candidate
    return best


def pool_shape(accelerator: Accelerator) -> PoolShape:
    """The node pool ``accelerator`` runs on; a ConfigError for CPU (the default pool's)."""
    if accelerator.category == "cpu":
        raise ConfigError(
            "cpu jobs run on the cluster's default pool, which `kinetic up` creates; a pool "
            "is added per accelerator (`kinetic accelerators` lists them)."
        )
    machine = machine_for(accelerator)
    if machine is None:
        raise ConfigError(f"No GKE machine type is known for accelerator {accelerator.name!r}.")
    if accelerator.category == "gpu":
        gpus = PoolHardware(machine.machine_type, accelerator.k8s_accelerator, accelerator.count)
        return PoolShape(accelerator, gpus)
    tpus = PoolHardware(machine.machine_type, tpu_topology=accelerator.topology)
    return PoolShape(accelerator, tpus, hosts=accelerator.hosts)


def pool_name(
    accelerator: Accelerator, *, spot: bool = False, reservation: str = "", flex_start: bool = False
) -> str:
    """Kinetic's name for the pool of ``accelerator``: ``kinetic-gpu-l4-x2[-spot|-flex]``, or
    with a reservation ``kinetic-gpu-l4-x2-r-<reservation>`` (cut to GKE's length)."""
    name = re.sub(r"[^a-z0-9-]+", "-", f"kinetic-{accelerator.name}".lower())
    if reservation:
        return f"{name}-r-{reservation}"[:_MAX_NAME].rstrip("-")
    suffix = "-spot" if spot else ("-flex" if flex_start else "")
    return name[: _MAX_NAME - len(suffix)].rstrip("-") + suffix


def pool_serves(
    pool: PoolInfo,
    accelerator: Accelerator,
    *,
    spot: bool = False,
    reservation: str = "",
    flex_start: bool = False,
) -> bool:
    """Whether ``pool`` can ever run a job of ``accelerator`` (on spot, on a reservation,
    through flex-start, or on demand)."""
    kind = (pool.spot, pool.reservation, pool.flex_start)
    if kind != (spot, reservation, flex_start) or not pool.can_have_nodes:
        return False
    hardware = pool.hardware
    if accelerator.category == "cpu":
        return not hardware.gpu_type and not hardware.tpu
    if accelerator.category == "gpu":
        return (
            hardware.gpu_type == accelerator.k8s_accelerator
            and hardware.gpu_count >= accelerator.count
        )
    if hardware.machine_type != accelerator.machine_type:
        return False
    if accelerator.multi_host:
        return hardware.tpu_topology == accelerator.topology
    return hardware.tpu_topology in ("", accelerator.topology)


def _tolerated(taint: Obj, tolerations: list[dict[str, object]]) -> bool:
    if taint.get("effect") not in ("NoSchedule", "NoExecute"):
        return True
    for toleration in tolerations:
        if toleration.get("key") != taint.get("key"):
            continue
        if toleration.get("operator") == "Exists" or toleration.get("value") == taint.get("value"):
            return True
    return False


def node_serves(
    node: Obj,
    accelerator: Accelerator,
    *,
    spot: bool = False,
    reservation: str = "",
    flex_start: bool = False,
) -> bool:
    """Whether a registered Node offers what a job of ``accelerator`` asks for: its labels
    match the pod's node selector, its taints are tolerated, its accelerators are enough."""
    placed = scheduling_for(accelerator, spot=spot, reservation=reservation, flex_start=flex_start)
    labels = node.get("metadata", {}).get("labels") or {}
    if any(labels.get(key) != value for key, value in placed.node_selector.items()):
        return False
    taints = node.get("spec", {}).get("taints") or []
    if not all(_tolerated(taint, placed.tolerations) for taint in taints):
        return False
    allocatable = node.get("status", {}).get("allocatable") or {}
    for resource in (GPU_RESOURCE, TPU_RESOURCE):
        wanted = placed.limits.get(resource)
        if wanted is not None and _count(allocatable.get(resource)) < int(wanted):
            return False
    return True


def _count(quantity: object) -> int:
    try:
        return int(str(quantity))
    except ValueError:
        return 0
