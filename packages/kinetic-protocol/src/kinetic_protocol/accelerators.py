"""The accelerator catalogue: every name ``accelerator=`` accepts, parsed into what it means.

It lives in the protocol package so the client can validate a name without importing any
backend; backends map an :class:`Accelerator` to their own scheduling terms.

Names: ``cpu``; ``gpu-<type>`` or ``gpu-<type>-x<count>`` (``l4`` alone also works);
``tpu-<generation>-<n>`` or ``tpu-<generation>-<topology>``. For v5e/v5litepod, v6e and v7x
(Ironwood, also spelled ``7x``, ``tpu7x`` or ``ironwood``) ``n`` counts chips; for v3, v4 and
v5p it counts TensorCores (two per chip), as Cloud TPU names do.

Every TPU shape is one row of GKE's TPU tables: node label, topology, machine type, chips per
host and host count. One size comes in two forms: v5e 2x4 (8 chips) runs on one
``ct5lp-hightpu-8t`` host or across two ``ct5lp-hightpu-4t`` hosts. The count spelling
(``tpu-v5e-8``, ``tpu-v5litepod-8``) means the single host, as Cloud TPU's ``v5litepod-8`` does;
the topology spelling (``tpu-v5litepod-2x4``) means the slice across hosts, as GKE's multi-host
2x4 node pool does. The suffixes ``-singlehost`` and ``-multihost`` make either form explicit on
any TPU name, and ``tpu-v5e-8-multihost`` is the canonical name of the two-host form.
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
    "TpuShape",
    "parse_accelerator",
    "valid_accelerator_names",
]

Category = Literal["cpu", "gpu", "tpu"]
_MULTI = "multihost"
_SINGLE = "singlehost"


class Accelerator(msgspec.Struct, frozen=True, kw_only=True):
    """A parsed accelerator name."""

    name: str
    """Canonical name, e.g. ``gpu-l4-x2``, ``tpu-v5e-8`` or ``tpu-v5e-8-multihost``."""
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
    machine_type: str = ""
    """The machine of one TPU host, e.g. ``ct5lp-hightpu-4t``; empty for CPU and GPU names,
    whose machines the GKE backend picks (``kinetic_gke.machines``)."""

    @property
    def multi_host(self) -> bool:
        return self.hosts > 1


class GpuType(msgspec.Struct, frozen=True):
    k8s_accelerator: str
    counts: tuple[int, ...]


class TpuShape(msgspec.Struct, frozen=True):
    """One GKE TPU slice shape: a topology on a machine type."""

    topology: str
    machine_type: str
    chips_per_host: int
    k8s_accelerator: str = ""
    """Only where this shape's nodes carry another label than the generation's (v3 devices)."""

    @property
    def chips(self) -> int:
        return _chips(self.topology)

    @property
    def hosts(self) -> int:
        return self.chips // self.chips_per_host


class TpuGeneration(msgspec.Struct, frozen=True):
    k8s_accelerator: str
    shapes: tuple[TpuShape, ...]
    cores_per_chip: int
    """2 where names count TensorCores (v3, v4, v5p); 1 where they count chips."""

    @property
    def topologies(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(shape.topology for shape in self.shapes))


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


def _chips(topology: str) -> int:
    return math.prod(int(d) for d in topology.split("x"))


def _single(topology: str, machine_type: str, k8s_accelerator: str = "") -> TpuShape:
    return TpuShape(topology, machine_type, _chips(topology), k8s_accelerator)


def _multi(machine_type: str, *topologies: str) -> tuple[TpuShape, ...]:
    return tuple(TpuShape(t, machine_type, 4) for t in topologies)


_2D = ("4x4", "4x8", "8x8", "8x16", "16x16")
_3D = ("2x2x2", "2x2x4", "2x4x4", "4x4x4")
TPU_GENERATIONS: dict[str, TpuGeneration] = {
    "v3": TpuGeneration(
        "tpu-v3-slice",
        (
            _single("2x2", "ct3-hightpu-4t", "tpu-v3-device"),
            *_multi("ct3p-hightpu-4t", *_2D[:4]),
        ),
        2,
    ),
    "v4": TpuGeneration(
        "tpu-v4-podslice",
        (_single("2x2x1", "ct4p-hightpu-4t"), *_multi("ct4p-hightpu-4t", *_3D, "4x4x8")),
        2,
    ),
    "v5e": TpuGeneration(
        "tpu-v5-lite-podslice",
        (
            _single("1x1", "ct5lp-hightpu-1t"),
            _single("2x2", "ct5lp-hightpu-4t"),
            _single("2x4", "ct5lp-hightpu-8t"),
            *_multi("ct5lp-hightpu-4t", "2x4", *_2D),
        ),
        1,
    ),
    "v5p": TpuGeneration(
        "tpu-v5p-slice",
        (_single("2x2x1", "ct5p-hightpu-4t"), *_multi("ct5p-hightpu-4t", *_3D, "4x4x8")),
        2,
    ),
    "v6e": TpuGeneration(
        "tpu-v6e-slice",
        (
            _single("1x1", "ct6e-standard-1t"),
            _single("2x2", "ct6e-standard-4t"),
            _single("2x4", "ct6e-standard-8t"),
            *_multi("ct6e-standard-4t", *_2D),
        ),
        1,
    ),
    "v7x": TpuGeneration(
        "tpu7x",
        (_single("2x2x1", "tpu7x-standard-4t"), *_multi("tpu7x-standard-4t", *_3D)),
        1,
    ),
}
_TPU_ALIASES = {
    "v5litepod": "v5e",
    "v5lite": "v5e",
    "v5": "v5e",
    "7x": "v7x",
    "tpu7x": "v7x",
    "ironwood": "v7x",
}

_GPU_RE = re.compile(r"^(?:gpu-)?(?P<type>[a-z0-9]+(?:-[a-z0-9]+)*?)(?:-x(?P<count>\d+))?$")
_TPU_RE = re.compile(
    r"^tpu-?(?P<gen>[0-9a-z]+)-(?P<size>\d+(?:x\d+)*)(?:-(?P<form>multihost|singlehost))?$"
)

CPU = Accelerator(name="cpu", category="cpu")


def _size(gen: TpuGeneration, shape: TpuShape) -> int:
    return shape.chips * gen.cores_per_chip


def _tpu(gen_name: str, shape: TpuShape) -> Accelerator:
    gen = TPU_GENERATIONS[gen_name]
    twins = [s for s in gen.shapes if s.chips == shape.chips]
    suffix = f"-{_MULTI}" if len(twins) > 1 and shape.hosts > 1 else ""
    return Accelerator(
        name=f"tpu-{gen_name}-{_size(gen, shape)}{suffix}",
        category="tpu",
        type=gen_name,
        count=shape.chips,
        topology=shape.topology,
        hosts=shape.hosts,
        chips_per_host=shape.chips_per_host,
        k8s_accelerator=shape.k8s_accelerator or gen.k8s_accelerator,
        machine_type=shape.machine_type,
    )


def valid_accelerator_names() -> list[str]:
    """Every canonical name, for error messages and ``kinetic accelerators``."""
    names = ["cpu"]
    for gpu, spec in GPU_TYPES.items():
        names += [f"gpu-{gpu}" if n == 1 else f"gpu-{gpu}-x{n}" for n in spec.counts]
    for gen_name, gen in TPU_GENERATIONS.items():
        names += [_tpu(gen_name, shape).name for shape in gen.shapes]
    return names


def _unknown(name: str, why: str) -> ConfigError:
    close = difflib.get_close_matches(name, valid_accelerator_names(), n=3, cutoff=0.6)
    hint = f" Did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
    return ConfigError(
        f"Unknown accelerator {name!r}: {why}.{hint} Valid names include 'cpu', "
        f"'gpu-<type>[-x<count>]' with type one of {', '.join(GPU_TYPES)}, and "
        f"'tpu-<generation>-<size>[-singlehost|-multihost]' with generation one of "
        f"{', '.join(TPU_GENERATIONS)} (run `kinetic accelerators` for the full list)."
    )


def parse_accelerator(name: str) -> Accelerator:
    """Parse ``name``; a :class:`ConfigError` names the problem and the nearest valid names."""
    if not isinstance(name, str) or not name.strip():
        raise _unknown(str(name), "expected a non-empty string")
    text = name.strip().lower()
    if text == "cpu":
        return CPU
    if text.startswith("tpu"):
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
        shapes = [s for s in gen.shapes if s.topology == size]
        if not shapes:
            raise _unknown(name, f"{gen_name} topologies are {', '.join(gen.topologies)}")
    else:
        shapes = [s for s in gen.shapes if _size(gen, s) == int(size)]
        if not shapes:
            sizes = dict.fromkeys(str(_size(gen, s)) for s in gen.shapes)
            raise _unknown(name, f"{gen_name} sizes are {', '.join(sizes)}")
    return _tpu(gen_name, _pick_form(name, shapes, match["form"], by_topology="x" in size))


def _pick_form(
    name: str, shapes: list[TpuShape], form: str | None, *, by_topology: bool
) -> TpuShape:
    """Choose between the single- and multi-host forms of one size (see the module docstring)."""
    single = [s for s in shapes if s.hosts == 1]
    multi = [s for s in shapes if s.hosts > 1]
    if form == _SINGLE and not single:
        raise _unknown(
            name,
            f"this slice only runs across {multi[0].hosts} hosts; drop '-{_SINGLE}' "
            f"or pick a smaller size",
        )
    if form == _MULTI and not multi:
        raise _unknown(
            name, f"this slice fits on one host and has no multi-host form; drop '-{_MULTI}'"
        )
    if form == _SINGLE or (form is None and not by_topology):
        return (single or multi)[0]
    return (multi or single)[0]
