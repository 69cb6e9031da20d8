"""``accelerator=`` as a list in order of preference, and ``capacity=``: the choices a job may
run on, checked once before anything is uploaded, and the one an attempt got.

A job's *choices* are every (accelerator, capacity) pair its two lists make, capacity first:
``accelerator=["gpu-h100-x8", "gpu-a100-80gb-x8"], capacity=["spot", "on-demand"]`` tries
H100 on spot, A100 on spot, H100 on demand, then A100 on demand. Capacity leads because it is
what a job pays for: a cheaper kind on any listed accelerator comes before a dearer one.

The accelerators of one list are one *family*, so that one image and one pod shape serve them
all: GPU shapes with the same number of GPUs, or TPU shapes with the same hosts and chips per
host. A kind of capacity is ``on-demand``, ``spot``, ``reservation:<name>`` (a Compute Engine
reservation) or ``flex-start`` (capacity obtained when it exists, through a queue's
provisioning request); a backend that cannot give one refuses it before upload.
"""

import math
import re
from typing import TYPE_CHECKING

import msgspec

from kinetic_protocol.errors import ConfigError

if TYPE_CHECKING:
    from kinetic_protocol.accelerators import Accelerator
    from kinetic_protocol.records import JobRecord

__all__ = [
    "CAPACITY_KINDS",
    "FLEX_START",
    "MAX_RUN_DURATION_S",
    "ON_DEMAND",
    "RESERVATION_PREFIX",
    "SPOT",
    "Choice",
    "Placement",
    "check_accelerators",
    "check_capacity",
    "check_max_run_duration",
    "job_choices",
    "record_accelerators",
    "record_capacity",
    "record_choices",
    "reservation_of",
]

ON_DEMAND = "on-demand"
SPOT = "spot"
FLEX_START = "flex-start"
CAPACITY_KINDS = (ON_DEMAND, SPOT, FLEX_START)
"""The kinds of capacity named by a word; a reservation is ``reservation:<name>``."""
MAX_RUN_DURATION_S = 7 * 24 * 3600
"""The longest a flex-start run may hold its nodes: GKE's limit, 7 days."""
RESERVATION_PREFIX = "reservation:"
_RESERVATION_NAME = re.compile(r"[a-z]([-a-z0-9]{0,61}[a-z0-9])?")
_KINDS_TEXT = "'on-demand', 'spot', 'flex-start' or 'reservation:<name>'"


class Choice(msgspec.Struct, frozen=True):
    """One accelerator on one kind of capacity."""

    accelerator: str
    capacity: str

    def describe(self) -> str:
        """``gpu-l4 (spot)``."""
        return f"{self.accelerator} ({self.capacity})"


class Placement(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """What one attempt was given: data on its state once its backend placed it (for a queue,
    the flavor the queue admitted it on)."""

    accelerator: str
    capacity: str
    flavor: str = ""
    """The queue's name for that capacity (a Kueue ResourceFlavor); empty where none."""

    def describe(self) -> str:
        """``gpu-l4 (spot, flavor kinetic-gpu-l4-spot)``."""
        flavor = f", flavor {self.flavor}" if self.flavor else ""
        return f"{self.accelerator} ({self.capacity}{flavor})"


def _names(option: str, value: object, what: str) -> list[str]:
    """``value`` (one name, or a list or tuple of them) as a non-empty list of names."""
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list | tuple) or not all(isinstance(i, str) for i in items):
        raise TypeError(
            f"{option} must be {what} or a list of them in order of preference, got "
            f"{type(value).__name__} {value!r}."
        )
    if not items:
        raise ConfigError(f"{option}=[] names nothing: give at least one ({what}).")
    repeated = sorted({item for item in items if items.count(item) > 1})
    if repeated:
        raise ConfigError(f"{option}={list(items)!r} names {', '.join(repeated)} twice.")
    return list(items)


def reservation_of(kind: str) -> str:
    """The reservation a ``reservation:<name>`` kind names; empty for any other kind."""
    return kind[len(RESERVATION_PREFIX) :] if kind.startswith(RESERVATION_PREFIX) else ""


def _check_kind(kind: str) -> str:
    if kind.startswith(RESERVATION_PREFIX):
        if not _RESERVATION_NAME.fullmatch(reservation_of(kind)):
            raise ConfigError(
                f"capacity={kind!r}: a reservation's name is lower-case letters, digits and "
                "'-', starting with a letter, at most 63 characters "
                "(`gcloud compute reservations list` shows yours)."
            )
        return kind
    if kind not in CAPACITY_KINDS:
        raise ConfigError(f"capacity={kind!r} is not a kind of capacity: use {_KINDS_TEXT}.")
    return kind


def check_capacity(value: object, *, spot: object = False) -> tuple[str, ...]:
    """``capacity=`` as kinds in order; None: ``spot`` says (``spot=True`` means
    ``capacity="spot"``). A ``spot=True`` beside a capacity that is not spot alone is refused:
    the two would say different things."""
    if not isinstance(spot, bool):
        raise TypeError(f"spot must be True or False, got {type(spot).__name__} {spot!r}.")
    if value is None:
        return (SPOT,) if spot else (ON_DEMAND,)
    kinds = tuple(_check_kind(kind) for kind in _names("capacity", value, _KINDS_TEXT))
    if spot and kinds != (SPOT,):
        raise ConfigError(
            f"spot=True means capacity='spot', and capacity={value!r} says otherwise. Pass one "
            "of them: capacity=['spot', 'on-demand'] tries spot first, then on-demand."
        )
    return kinds


def check_max_run_duration(value: object, capacity: tuple[str, ...]) -> int:
    """``max_run_duration=`` in whole seconds (0: not given). It bounds a flex-start run, so it
    is refused without flex-start among ``capacity``, and beyond GKE's 7 days."""
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(
            f"max_run_duration must be a number of seconds, got {type(value).__name__} {value!r}."
        )
    if not 0 < value <= MAX_RUN_DURATION_S:
        raise ConfigError(
            f"max_run_duration={value!r} seconds: a flex-start run may last more than 0 seconds "
            f"and at most 7 days ({MAX_RUN_DURATION_S} seconds), GKE's limit."
        )
    if FLEX_START not in capacity:
        raise ConfigError(
            f"max_run_duration={value!r} bounds a flex-start run (how long its nodes are held), "
            f"and capacity={list(capacity)!r} has no flex-start. Add capacity='flex-start', or "
            "use timeout= to bound any run."
        )
    return math.ceil(value)


def check_accelerators(value: object) -> "tuple[Accelerator, ...]":
    """``accelerator=`` (a name, or a list in order of preference within one family) parsed;
    a ConfigError names the entry that breaks the family and says what a list may hold."""
    from kinetic_protocol.accelerators import parse_accelerator  # the catalogue, when needed

    accelerators = tuple(parse_accelerator(name) for name in _names("accelerator", value, "a name"))
    first = accelerators[0]
    for other in accelerators[1:]:
        problem = _family_difference(first, other)
        if problem:
            raise ConfigError(
                f"accelerator={[a.name for a in accelerators]!r} mixes families: {problem}. A "
                "list holds fallbacks one image and one pod shape can run on: GPU shapes with "
                "the same number of GPUs, or TPU shapes with the same hosts and chips per host "
                "(`kinetic accelerators` lists them)."
            )
    return accelerators


def _family_difference(first: "Accelerator", other: "Accelerator") -> str:
    """Why ``other`` cannot stand in for ``first``; empty when it can."""
    if "cpu" in (first.category, other.category):
        return "'cpu' runs on any machine and has no fallback"
    if first.category != other.category:
        kinds = first.category.upper(), other.category.upper()
        return f"{first.name!r} is a {kinds[0]}, {other.name!r} a {kinds[1]}"
    if first.category == "gpu" and first.count != other.count:
        return f"{first.name!r} has {first.count} GPU(s), {other.name!r} {other.count}"
    if first.category == "tpu" and first.hosts != other.hosts:
        return f"{first.name!r} spans {first.hosts} hosts, {other.name!r} {other.hosts}"
    if first.category == "tpu" and first.chips_per_host != other.chips_per_host:
        return (
            f"{first.name!r} has {first.chips_per_host} chips per host, {other.name!r} "
            f"{other.chips_per_host}"
        )
    return ""


def job_choices(accelerators: tuple[str, ...], capacity: tuple[str, ...]) -> tuple[Choice, ...]:
    """Every choice in the order a job tries them: each kind of capacity in turn, on each
    accelerator in turn."""
    return tuple(Choice(name, kind) for kind in capacity for name in accelerators)


def record_accelerators(record: "JobRecord") -> tuple[str, ...]:
    """A job record's accelerators in order (its ``accelerator``, then its fallbacks)."""
    return (record.accelerator, *record.fallback_accelerators)


def record_capacity(record: "JobRecord") -> tuple[str, ...]:
    """A job record's kinds of capacity in order; a record written before ``capacity``
    existed reads as spot where ``spot`` is set, else on-demand."""
    if record.capacity:
        return tuple(record.capacity)
    return (SPOT,) if record.spot else (ON_DEMAND,)


def record_choices(record: "JobRecord") -> tuple[Choice, ...]:
    """A job record's choices in the order it tries them."""
    return job_choices(record_accelerators(record), record_capacity(record))
