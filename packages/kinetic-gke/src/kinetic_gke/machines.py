"""The GKE machine behind each accelerator shape, and the CPU and memory a pod asks for on it.

A pod that requests only `nvidia.com/gpu` or `google.com/tpu` gets QoS class BestEffort: it is
the first evicted under memory pressure and nothing is reserved for it. Kinetic therefore
requests three quarters of the host's vCPUs and memory (the rest is left to GKE's system
reservation and daemon sets), which makes the pod Burstable with real guarantees.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from kinetic_protocol import Accelerator

__all__ = ["CPU_ONLY", "MachineShape", "machine_for", "machine_shape", "pod_requests"]

_SHARE = 0.75


@dataclass(frozen=True)
class MachineShape:
    machine_type: str
    vcpus: int
    memory_gib: int


CPU_ONLY = {"cpu": "500m", "memory": "1Gi"}
"""What a CPU job asks for: enough to be scheduled and kept, small enough for any node."""

_GPU_MACHINES: dict[str, dict[int, MachineShape]] = {
    "t4": {n: MachineShape(f"n1-standard-{4 * n}", 4 * n, 15 * n) for n in (1, 2, 4)},
    "p4": {n: MachineShape(f"n1-standard-{4 * n}", 4 * n, 15 * n) for n in (1, 2, 4)},
    "v100": {n: MachineShape(f"n1-standard-{8 * n}", 8 * n, 30 * n) for n in (1, 2, 4, 8)},
    "p100": {n: MachineShape(f"n1-standard-{8 * n}", 8 * n, 30 * n) for n in (1, 2, 4)},
    "l4": {
        1: MachineShape("g2-standard-4", 4, 16),
        2: MachineShape("g2-standard-24", 24, 96),
        4: MachineShape("g2-standard-48", 48, 192),
        8: MachineShape("g2-standard-96", 96, 384),
    },
    "a100": {
        **{n: MachineShape(f"a2-highgpu-{n}g", 12 * n, 85 * n) for n in (1, 2, 4, 8)},
        16: MachineShape("a2-megagpu-16g", 96, 1360),
    },
    "a100-80gb": {n: MachineShape(f"a2-ultragpu-{n}g", 12 * n, 170 * n) for n in (1, 2, 4, 8)},
    "h100": {n: MachineShape(f"a3-highgpu-{n}g", 26 * n, 234 * n) for n in (1, 2, 4, 8)},
    "h100-mega": {8: MachineShape("a3-megagpu-8g", 208, 1872)},
    "h200": {8: MachineShape("a3-ultragpu-8g", 224, 2952)},
    "b200": {8: MachineShape("a4-highgpu-8g", 224, 3968)},
}
_TPU_MACHINES: dict[str, MachineShape] = {
    shape.machine_type: shape
    for shape in (
        MachineShape("ct3-hightpu-4t", 96, 340),
        MachineShape("ct3p-hightpu-4t", 48, 340),
        MachineShape("ct4p-hightpu-4t", 240, 407),
        MachineShape("ct5lp-hightpu-1t", 24, 48),
        MachineShape("ct5lp-hightpu-4t", 112, 192),
        MachineShape("ct5lp-hightpu-8t", 224, 384),
        MachineShape("ct5p-hightpu-4t", 208, 448),
        MachineShape("ct6e-standard-1t", 44, 176),
        MachineShape("ct6e-standard-4t", 180, 720),
        MachineShape("ct6e-standard-8t", 180, 1440),
        MachineShape("tpu7x-standard-4t", 224, 960),
    )
}
"""Sizes of the TPU hosts; which host a shape runs on is the catalogue's ``machine_type``."""


def machine_for(accelerator: Accelerator) -> MachineShape | None:
    """The machine one host of `accelerator` runs on; None for CPU jobs."""
    if accelerator.category == "gpu":
        return _GPU_MACHINES.get(accelerator.type, {}).get(accelerator.count)
    if accelerator.category == "tpu":
        return _TPU_MACHINES.get(accelerator.machine_type)
    return None


_BY_NAME = {
    shape.machine_type: shape
    for shape in (*_TPU_MACHINES.values(), *(s for c in _GPU_MACHINES.values() for s in c.values()))
}
_PREDEFINED = re.compile(
    r"(?P<family>[a-z][a-z0-9]*)-(?P<kind>standard|highmem|highcpu)-(?P<n>\d+)"
)
_GIB_PER_VCPU = {"standard": 4.0, "highmem": 8.0, "highcpu": 1.0}
_N1_GIB_PER_VCPU = {"standard": 3.75, "highmem": 6.5, "highcpu": 0.9}


def machine_shape(machine_type: str) -> MachineShape | None:
    """The vCPUs and memory of a Compute Engine machine type: one an accelerator runs on, or a
    predefined ``<family>-standard|highmem|highcpu-<vCPUs>`` shape (memory by the family's
    ratio, rounded down); None for a type Kinetic does not know (a custom machine)."""
    known = _BY_NAME.get(machine_type)
    if known is not None:
        return known
    match = _PREDEFINED.fullmatch(machine_type)
    if match is None:
        return None
    vcpus = int(match["n"])
    ratios = _N1_GIB_PER_VCPU if match["family"] == "n1" else _GIB_PER_VCPU
    return MachineShape(machine_type, vcpus, int(vcpus * ratios[match["kind"]]))


def pod_requests(accelerator: Accelerator) -> dict[str, str]:
    """CPU and memory requests for one host's pod: three quarters of its machine."""
    machine = machine_for(accelerator)
    if machine is None:
        return dict(CPU_ONLY)
    cpu = max(1, int(machine.vcpus * _SHARE))
    memory = max(1, int(machine.memory_gib * _SHARE))
    return {"cpu": str(cpu), "memory": f"{memory}Gi"}
