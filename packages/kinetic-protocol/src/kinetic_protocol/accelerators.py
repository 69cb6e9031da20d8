"""The accelerator catalogue: every name ``accelerator=`` accepts, parsed into what it means.

It lives in the protocol package so the client can validate a name without importing any
backend; backends map an :class:`Accelerator` to their own scheduling terms.

Names: ``cpu``; ``gpu-<type>`` or ``gpu-<type>-x<count>`` (``l4`` alone also works);
``tpu-<generation>-<n>`` or ``tpu-<generation>-<topology>``. For v5e/v5litepod and v6e, ``n``
counts chips; for v3, v4 and v5p it counts TensorCores (two per chip), as Cloud TPU names do.
"""

import difflib
import math
import re
from typing import Literal

import msgspec

from kinetic_protocol.errors import ConfigError

__all__ = [
    "GPU_TYPES",
    "TPU_GENERATIONS",
    "Accelerator",
    "GpuType",
    "TpuGeneration",
    "parse_accelerator",
    "valid_accelerator_names",
]

Category = Literal["cpu", "gpu", "tpu"]


class Accelerator(msgspec.Struct, frozen=True, kw_only=True):
    """A parsed accelerator name."""

    name: str
    """Canonical name, e.g. ``gpu-l4-x2`` or ``tpu-v5e-8``."""
    category: Category
    type: str = ""
    """``l4``, ``a100``, ``v5e``, ...; empty for CPU."""
    count: int = 0
    """GPUs, or TPU chips in the whole slice."""
    topology: str = ""
    hosts: int = 1
    chips_per_host: int = 0
    k8s_accelerator: str = ""
    """GKE's node label value: ``nvidia-l4``, ``tpu-v5-lite-podslice``, ..."""

    @property
    def multi_host(self) -> bool:
        return self.hosts > 1


class GpuType(msgspec.Struct, frozen=True):
    k8s_accelerator: str
    counts: tuple[int, ...]


class TpuGeneration(msgspec.Struct, frozen=True):
    k8s_accelerator: str
    topologies: tuple[str, ...]
    cores_per_chip: int
    """2 where names count TensorCores (v3, v4, v5p); 1 where they count chips."""
    max_chips_per_host: int


GPU_TYPES: dict[str, GpuType] = {
    "t4": GpuType("nvidia-tesla-t4", (1, 2, 4)),
    "p4": GpuType("nvidia-tesla-p4", (1, 2, 4)),
    "v100": GpuType("nvidia-tesla-v100", (1, 2, 4, 8)),
    "p100": GpuType("nvidia-tesla-p100", (1, 2, 4)),
    "l4": GpuType("nvidia-l4", (1, 2, 4, 8)),
    "a100": GpuType("nvidia-tesla-a100", (1, 2, 4, 8, 16)),
    "a100-80gb": GpuType("nvidia-a100-80gb", (1, 2, 4, 8)),
    "h100": GpuType("nvidia-h100-80gb", (1, 2, 4, 8)),
    "h100-mega": GpuType("nvidia-h100-mega-80gb", (8,)),
    "h200": GpuType("nvidia-h200-141gb", (8,)),
    "b200": GpuType("nvidia-b200", (8,)),
}

_TWO_D_SLICES = ("4x4", "4x8", "8x8", "8x16", "16x16")
TPU_GENERATIONS: dict[str, TpuGeneration] = {
    "v3": TpuGeneration("tpu-v3-slice", ("2x2", *_TWO_D_SLICES[:4]), 2, 4),
    "v4": TpuGeneration(
        "tpu-v4-podslice", ("2x2x1", "2x2x2", "2x2x4", "2x4x4", "4x4x4", "4x4x8"), 2, 4
    ),
    "v5e": TpuGeneration("tpu-v5-lite-podslice", ("1x1", "2x2", "2x4", *_TWO_D_SLICES), 1, 8),
    "v5p": TpuGeneration(
        "tpu-v5p-slice", ("2x2x1", "2x2x2", "2x2x4", "2x4x4", "4x4x4", "4x4x8"), 2, 4
    ),
    "v6e": TpuGeneration("tpu-v6e-slice", ("1x1", "2x2", "2x4", *_TWO_D_SLICES), 1, 8),
}
_TPU_ALIASES = {"v5litepod": "v5e", "v5lite": "v5e", "v5": "v5e"}

_GPU_RE = re.compile(r"^(?:gpu-)?(?P<type>[a-z0-9]+(?:-[a-z0-9]+)*?)(?:-x(?P<count>\d+))?$")
_TPU_RE = re.compile(r"^tpu-(?P<gen>v[0-9a-z]+)-(?P<size>\d+(?:x\d+)*)$")

CPU = Accelerator(name="cpu", category="cpu")


def _chips(topology: str) -> int:
    return math.prod(int(d) for d in topology.split("x"))


def _tpu(gen_name: str, topology: str) -> Accelerator:
    gen = TPU_GENERATIONS[gen_name]
    chips = _chips(topology)
    per_host = chips if chips <= gen.max_chips_per_host else 4
    return Accelerator(
        name=f"tpu-{gen_name}-{chips * gen.cores_per_chip}",
        category="tpu",
        type=gen_name,
        count=chips,
        topology=topology,
        hosts=max(1, chips // per_host),
        chips_per_host=per_host,
        k8s_accelerator=gen.k8s_accelerator,
    )


def valid_accelerator_names() -> list[str]:
    """Every canonical name, for error messages and ``kinetic accelerators``."""
    names = ["cpu"]
    for gpu, spec in GPU_TYPES.items():
        names += [f"gpu-{gpu}" if n == 1 else f"gpu-{gpu}-x{n}" for n in spec.counts]
    for gen_name, gen in TPU_GENERATIONS.items():
        for topology in gen.topologies:
            n = _chips(topology) * gen.cores_per_chip
            names.append(f"tpu-{gen_name}-{n}")
    return names


def _unknown(name: str, why: str) -> ConfigError:
    close = difflib.get_close_matches(name, valid_accelerator_names(), n=3, cutoff=0.6)
    hint = f" Did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
    return ConfigError(
        f"Unknown accelerator {name!r}: {why}.{hint} Valid names include 'cpu', "
        f"'gpu-<type>[-x<count>]' with type one of {', '.join(GPU_TYPES)}, and "
        f"'tpu-<generation>-<size>' with generation one of {', '.join(TPU_GENERATIONS)} "
        "(run `kinetic accelerators` for the full list)."
    )


def parse_accelerator(name: str) -> Accelerator:
    """Parse ``name``; a :class:`ConfigError` names the problem and the nearest valid names."""
    if not isinstance(name, str) or not name.strip():
        raise _unknown(str(name), "expected a non-empty string")
    text = name.strip().lower()
    if text == "cpu":
        return CPU
    if text.startswith("tpu-"):
        return _parse_tpu(name, text)
    match = _GPU_RE.match(text)
    if match and match["type"] in GPU_TYPES:
        gpu = GPU_TYPES[match["type"]]
        count = int(match["count"] or 1)
        if count not in gpu.counts:
            raise _unknown(name, f"{match['type']} comes in counts of {gpu.counts}")
        canonical = f"gpu-{match['type']}" + (f"-x{count}" if count > 1 else "")
        return Accelerator(
            name=canonical,
            category="gpu",
            type=match["type"],
            count=count,
            k8s_accelerator=gpu.k8s_accelerator,
        )
    raise _unknown(name, "not a known CPU, GPU or TPU name")


def _parse_tpu(name: str, text: str) -> Accelerator:
    match = _TPU_RE.match(text)
    if not match:
        raise _unknown(name, "TPU names look like 'tpu-v5e-8' or 'tpu-v5litepod-2x4'")
    display_gen = match["gen"]
    gen_name = _TPU_ALIASES.get(display_gen, display_gen)
    gen = TPU_GENERATIONS.get(gen_name)
    if gen is None:
        raise _unknown(name, f"unknown TPU generation {display_gen!r}")
    size = match["size"]
    if "x" in size:
        if size not in gen.topologies:
            raise _unknown(name, f"{gen_name} topologies are {', '.join(gen.topologies)}")
        return _tpu(gen_name, size)
    wanted_chips, remainder = divmod(int(size), gen.cores_per_chip)
    for topology in gen.topologies:
        if not remainder and _chips(topology) == wanted_chips:
            return _tpu(gen_name, topology)
    sizes = ", ".join(str(_chips(t) * gen.cores_per_chip) for t in gen.topologies)
    raise _unknown(name, f"{gen_name} sizes are {sizes}")
