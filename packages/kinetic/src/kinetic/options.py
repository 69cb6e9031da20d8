"""The validated options of one ``@kinetic.run(...)`` decoration, and of one
``run_async_map(...)`` fan-out over it."""

import dataclasses
import itertools
import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from kinetic._seconds import as_seconds, shown_seconds
from kinetic.data import Data
from kinetic.env_capture import check_patterns
from kinetic_protocol import Accelerator, ConfigError
from kinetic_protocol.capacity import check_accelerators, check_capacity, check_max_run_duration
from kinetic_protocol.causes import RETRYABLE
from kinetic_protocol.data import check_volume_path
from kinetic_protocol.host_groups import check_host_groups
from kinetic_protocol.queueing import check_priority_name, check_queue_name
from kinetic_protocol.records import DEFAULT_PREEMPTION_RETRIES

__all__ = ["MapOptions", "RunOptions"]


@dataclass(frozen=True)
class RunOptions:
    """Everything the decorator was given, checked once at decoration time."""

    accelerator: Accelerator
    """The accelerator, or the first of ``accelerator=``'s list."""
    container_image: str | None = None
    base_image_repo: str | None = None
    zone: str | None = None
    project: str | None = None
    capture_env_vars: tuple[str, ...] = ()
    cluster: str | None = None
    backend: str | None = None
    namespace: str | None = None
    volumes: tuple[tuple[str, Data], ...] = ()
    spot: bool = False
    output_dir: str | None = None
    debug: bool = False
    isolate: bool = False
    timeout: float | None = None
    """Seconds each attempt may run (validated: a positive finite number)."""
    preemption_retries: int = DEFAULT_PREEMPTION_RETRIES
    """Times a preempted attempt is run again in place (validated: a non-negative int)."""
    queue: str | None = None
    """``queue=`` (validated as a name); None: ``KINETIC_QUEUE``, the profile, the backend's."""
    priority: str | None = None
    """``priority=`` (validated as a name); None: ``KINETIC_PRIORITY``, the profile, none."""
    nodes: int = 1
    """``nodes=``: hosts of a GPU or CPU accelerator (validated with the accelerator)."""
    slices: int = 1
    """``slices=``: TPU slices (validated with the accelerator)."""
    fallback_accelerators: tuple[Accelerator, ...] = ()
    """The rest of ``accelerator=``'s list, in order (validated as one family)."""
    capacity: tuple[str, ...] = ("on-demand",)
    """``capacity=``'s kinds in order (``spot=True``: ``("spot",)``)."""
    max_run_duration: int = 0
    """``max_run_duration=`` in seconds (validated with the capacity); 0: not given."""

    @property
    def accelerators(self) -> tuple[Accelerator, ...]:
        """Every accelerator the job may run on, in order of preference."""
        return (self.accelerator, *self.fallback_accelerators)

    @classmethod
    def build(
        cls,
        *,
        accelerator: object,
        capture_env_vars: list[str] | None,
        volumes: dict[str, Data] | None,
        **rest: object,
    ) -> "RunOptions":
        if isinstance(capture_env_vars, str):
            raise TypeError(
                f"capture_env_vars must be a list of names, got the string {capture_env_vars!r}."
                f" Did you mean [{capture_env_vars!r}]?"
            )
        if capture_env_vars is not None and not isinstance(capture_env_vars, list | tuple):
            raise TypeError(
                f"capture_env_vars must be a list of names, got {type(capture_env_vars).__name__}"
                f" {capture_env_vars!r}."
            )
        patterns = check_patterns(capture_env_vars or ())
        output_dir = rest.get("output_dir")
        if output_dir is not None:
            _check_output_dir(output_dir)
        if rest.get("timeout") is not None:
            rest["timeout"] = _checked_timeout(rest["timeout"])
        _check_preemption_retries(rest.get("preemption_retries", DEFAULT_PREEMPTION_RETRIES))
        _check_queueing(rest.get("queue"), rest.get("priority"))
        first, *fallbacks = check_accelerators(accelerator)
        for parsed in (first, *fallbacks):
            check_host_groups(parsed, rest.get("nodes", 1), rest.get("slices", 1))
        capacity = check_capacity(rest.pop("capacity", None), spot=rest.get("spot", False))
        rest["max_run_duration"] = check_max_run_duration(rest.get("max_run_duration"), capacity)
        return cls(
            accelerator=first,
            fallback_accelerators=tuple(fallbacks),
            capacity=capacity,
            capture_env_vars=patterns,
            volumes=_checked_volumes(volumes),
            **rest,  # type: ignore[arg-type]
        )

    def overridden(self, *, queue: object = None, priority: object = None) -> "RunOptions":
        """These options with a call's own ``queue``/``priority`` (None keeps the decorator's),
        checked as the decorator checks them."""
        _check_queueing(queue, priority)
        return dataclasses.replace(
            self,
            queue=self.queue if queue is None else str(queue),
            priority=self.priority if priority is None else str(priority),
        )


def _check_queueing(queue: object, priority: object) -> None:
    """Names only: whether the queue and class exist is the backend's to say (``prepare``)."""
    if queue is not None:
        check_queue_name(queue)
    if priority is not None:
        check_priority_name(priority)


def _checked_volumes(volumes: object) -> tuple[tuple[str, Data], ...]:
    """``volumes=`` as (normalised absolute path, Data) pairs; refuses what cannot be mounted:
    relative, reserved or system paths, one path twice, and one volume inside another."""
    if volumes is None:
        return ()
    if not isinstance(volumes, dict):
        raise TypeError(f"volumes must be a dict of mount path to kinetic.Data, got {volumes!r}.")
    mounts: list[tuple[str, Data]] = []
    for mount, data in volumes.items():
        if not isinstance(mount, str):
            raise TypeError(f"volumes key {mount!r} must be a str (an absolute mount path).")
        if not isinstance(data, Data):
            raise TypeError(f"volumes[{mount!r}] must be a kinetic.Data, got {data!r}.")
        mounts.append((check_volume_path(mount), data))
    ordered = sorted(path for path, _ in mounts)
    for first, second in itertools.pairwise(ordered):
        if first == second or second.startswith(first + "/"):
            raise ConfigError(
                f"volumes {first!r} and {second!r} overlap; give each volume its own directory."
            )
    return tuple(mounts)


MAX_TIMEOUT_S = 10 * 365 * 24 * 3600
"""The longest ``timeout=`` accepted: ten years. Past about 292 years no backend can even
wait that long (the platform's time limit), and anything near is a slip of units, not a plan."""


def _checked_timeout(timeout: object) -> float:
    """``timeout=`` as seconds: a positive number up to :data:`MAX_TIMEOUT_S` (an int or a
    float, not a bool)."""
    if isinstance(timeout, bool) or not isinstance(timeout, int | float):
        raise TypeError(
            f"timeout must be a number of seconds (int or float), got "
            f"{type(timeout).__name__} {timeout!r}."
        )
    seconds = as_seconds(timeout)
    if math.isnan(seconds) or seconds <= 0 or (isinstance(timeout, float) and math.isinf(seconds)):
        raise ConfigError(
            f"timeout={shown_seconds(timeout)} must be a positive, finite number of seconds (each "
            "attempt is stopped after that long); leave it unset (None) for no limit."
        )
    if seconds > MAX_TIMEOUT_S:
        raise ConfigError(
            f"timeout={shown_seconds(timeout)} is longer than the largest accepted, "
            f"{MAX_TIMEOUT_S} seconds (ten years); leave it unset (None) for no limit."
        )
    return seconds


def _check_preemption_retries(value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(
            f"preemption_retries must be a non-negative int (how many times a preempted "
            f"attempt is run again), got {type(value).__name__} {value!r}."
        )
    if value < 0:
        raise ConfigError(
            f"preemption_retries={value!r} must be 0 or more: how many times a preempted "
            f"attempt is run again before the job fails (default {DEFAULT_PREEMPTION_RETRIES}; "
            "0 never runs it again)."
        )


def _check_output_dir(output_dir: object) -> None:
    if not isinstance(output_dir, str):
        raise TypeError(
            f"output_dir must be a str, got {type(output_dir).__name__} {output_dir!r}."
        )
    if not (output_dir.startswith(("gs://", "/"))):
        raise ConfigError(
            f"output_dir={output_dir!r} must be a gs:// URI (gs://bucket/prefix) or an absolute "
            "directory path."
        )


@dataclass(frozen=True)
class MapOptions:
    """How ``run_async_map`` fans a remote function out, checked once (:meth:`build`) before
    anything is resolved or stored. Its defaults are ``run_async_map``'s, written there."""

    input_mode: str
    max_concurrent: int | None
    retries: int
    fail_fast: bool
    cancel_running_on_fail: bool
    name: str | None
    tags: dict[str, str]
    retry_on: list[str] | None
    """The sorted cause values retries apply to; None for the default set."""
    max_cost: float | None = None
    """USD at list prices past which no new input is submitted; None: no cap."""

    @classmethod
    def build(
        cls,
        *,
        max_concurrent: object,
        retries: object,
        name: object,
        tags: object,
        retry_on: object,
        max_cost: object = None,
        **rest: Any,
    ) -> "MapOptions":
        """Refuse bad arguments: a wrong type is a TypeError, a wrong value of the right type
        a ConfigError (a ValueError, as the spec promises); see ``docs/architecture.md``
        ("Errors"). ``input_mode`` is checked with the inputs."""
        return cls(
            max_concurrent=_checked_max_concurrent(max_concurrent),
            retries=_checked_retries(retries),
            name=_checked_name(name),
            tags=_checked_tags(tags),
            retry_on=_checked_retry_on(retry_on),
            max_cost=checked_max_cost(max_cost),
            **rest,
        )


def _checked_max_concurrent(value: object) -> int | None:
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(
            "max_concurrent must be a positive int or None (no limit); got "
            f"{type(value).__name__} {value!r}."
        )
    if value < 1:
        raise ConfigError(
            f"max_concurrent must be a positive int or None (no limit); got {value!r}."
        )
    return value


def _checked_retries(value: object) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(
            f"retries must be a non-negative int; got {type(value).__name__} {value!r}."
        )
    if value < 0:
        raise ConfigError(f"retries must be a non-negative int; got {value!r}.")
    return value


def _checked_name(value: object) -> str | None:
    if value is not None and not isinstance(value, str):
        raise TypeError(f"name must be a str or None; got {type(value).__name__} {value!r}.")
    return value


def _checked_tags(tags: object) -> dict[str, str]:
    """The tags as a fresh dict (none: empty)."""
    if tags is None:
        return {}
    if not isinstance(tags, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in tags.items()
    ):
        raise TypeError(f"tags must be a dict of str to str; got {tags!r}.")
    return dict(tags)


def _checked_retry_on(retry_on: object) -> list[str] | None:
    """``retry_on`` as the sorted cause values to store; refuses a name that is not a cause."""
    if retry_on is None:
        return None
    valid = ", ".join(sorted(cause.value for cause in RETRYABLE))
    if isinstance(retry_on, str) or not isinstance(retry_on, Iterable):
        raise TypeError(
            f"retry_on must be a list of failure causes (any of {valid}), got "
            f"{type(retry_on).__name__} {retry_on!r}."
        )
    names: set[str] = set()
    for item in retry_on:
        if not isinstance(item, str) or item not in {cause.value for cause in RETRYABLE}:
            raise ConfigError(
                f"retry_on names {item!r}, which is not a cause retries can apply to; valid "
                f"causes are {valid} (a cancelled attempt is never retried)."
            )
        names.add(str(item))  # a FailureCause is a str: store its plain value
    return sorted(names)


def checked_max_cost(value: object) -> float | None:
    """``max_cost`` in USD: a positive, finite number, or None for no cap."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(
            f"max_cost must be a number of US dollars or None (no cap), got "
            f"{type(value).__name__} {value!r}."
        )
    if not (math.isfinite(value) and value > 0):
        raise ConfigError(
            f"max_cost={value!r}: a cap on a batch's list cost is a positive number of US "
            "dollars (None: no cap)."
        )
    return float(value)
