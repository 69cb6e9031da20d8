"""This process's place in a multi-host job, and JAX's multi-process set-up from it.

A backend starts one runtime per host with ``KINETIC_NUM_HOSTS`` set. The host index and the
leader's address come from Kinetic's own variables (the local backend sets them) or, in a
LeaderWorkerSet pod, from what the LWS controller injects (``LWS_WORKER_INDEX``,
``LWS_LEADER_ADDRESS``), so the pod spec stays the same for every host.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import sys
import time
import types
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Literal

from kinetic_protocol import ConfigError, HostStart, ObjectStore, PreconditionFailedError, layout
from kinetic_protocol.records import decode_json, encode_json
from kinetic_runtime import settings

__all__ = [
    "COORDINATOR_PORT",
    "SliceError",
    "SliceHost",
    "claim_host",
    "initialise_jax",
    "wait_for_slice",
]

COORDINATOR_PORT = 8476
"""Where the leader serves JAX's coordinator when the backend names only the leader's host."""

Claim = Literal["run", "restarted", "replaced"]
_POLL_S = 0.5


class SliceError(RuntimeError):
    """This host could not join the other hosts of its slice, so the function did not run."""


def _integer(name: str, raw: str) -> int:
    try:
        return int(raw)
    except ValueError:
        raise ConfigError(f"{name} must be an integer, got {raw!r}.") from None


@dataclass(frozen=True)
class SliceHost:
    """One host of a multi-host job."""

    index: int
    count: int
    coordinator: str
    """``HOST:PORT`` of the leader's JAX coordinator."""
    instance: str

    @property
    def is_leader(self) -> bool:
        return self.index == 0

    @property
    def label(self) -> str:
        return f"host {self.index} of {self.count}"

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> SliceHost | None:
        """The host this process is, or None for a single-host job."""
        env = os.environ if environ is None else environ
        count = _integer(settings.NUM_HOSTS.env, settings.NUM_HOSTS.value(env) or "1")
        if count <= 1:
            return None
        index_var = next(
            (v for v in (settings.HOST_INDEX.env, *settings.HOST_INDEX.fallback_env) if env.get(v)),
            None,
        )
        if index_var is None:
            raise ConfigError(
                f"This job spans {count} hosts but no host index is set "
                f"({settings.HOST_INDEX.env}, LWS_WORKER_INDEX or TPU_WORKER_ID)."
            )
        index = _integer(index_var, env[index_var])
        if not 0 <= index < count:
            raise ConfigError(f"{index_var}={index} is outside 0..{count - 1}.")
        coordinator = settings.COORDINATOR_ADDRESS.from_env(env)
        if coordinator is None and env.get("LWS_LEADER_ADDRESS"):
            coordinator = f"{env['LWS_LEADER_ADDRESS']}:{COORDINATOR_PORT}"
        if coordinator is None:
            raise ConfigError(
                f"This job spans {count} hosts but no coordinator address is set "
                f"({settings.COORDINATOR_ADDRESS.env} or LWS_LEADER_ADDRESS)."
            )
        instance = (
            settings.HOST_INSTANCE.from_env(env) or env.get("HOSTNAME") or f"pid-{os.getpid()}"
        )
        return cls(index=index, count=count, coordinator=coordinator, instance=instance)

    def environment(self) -> dict[str, str]:
        """What the function sees: its host index, and what code that sets up
        ``jax.distributed`` itself reads (JAX reads the coordinator's address on its own)."""
        return {
            settings.HOST_INDEX.env: str(self.index),
            "JAX_COORDINATOR_ADDRESS": self.coordinator,
            "JAX_NUM_PROCESSES": str(self.count),
            "JAX_PROCESS_ID": str(self.index),
        }


def claim_host(store: ObjectStore, job_id: str, host: SliceHost) -> Claim:
    """Record that ``host`` starts the job; say if it had started before.

    ``restarted``: the same pod ran it already (its container exited and Kubernetes restarted
    it); ``replaced``: another pod did (Kubernetes replaced an evicted or lost pod). Either
    way the function must not run again: Kinetic, not Kubernetes, decides what re-runs.
    """
    key = layout.host_started_key(job_id, host.index)
    start = HostStart(
        job_id=job_id,
        host=host.index,
        hosts=host.count,
        instance=host.instance,
        started_at=datetime.now(UTC).isoformat(timespec="milliseconds"),
    )
    try:
        store.write(key, encode_json(start), if_absent=True)
    except PreconditionFailedError:
        earlier = decode_json(store.read(key), HostStart, what=key)
        return "restarted" if earlier.instance == host.instance else "replaced"
    return "run"


def wait_for_slice(store: ObjectStore, job_id: str, host: SliceHost, timeout_s: float) -> None:
    """Return once every host of the slice has started (claimed its start in the store).

    JAX aborts the whole process when its coordinator cannot be reached, leaving no record of
    why; waiting here first turns the usual cause, a host that never started, into a
    :class:`SliceError` that names it and is stored like any other failure.
    """
    missing = [index for index in range(host.count) if index != host.index]
    deadline = time.monotonic() + timeout_s
    while True:
        missing = [i for i in missing if not store.exists(layout.host_started_key(job_id, i))]
        if not missing or time.monotonic() >= deadline:
            break
        time.sleep(_POLL_S)
    if missing:
        names = ", ".join(str(index) for index in missing)
        raise SliceError(
            f"{host.label} cannot form the slice: host(s) {names} did not start within "
            f"{timeout_s:g}s, so the function does not run (alone it would run as a separate "
            f"single host). Look at host {missing[0]}'s pod or log; a slow start may need a "
            f"longer {settings.SLICE_TIMEOUT.env} (pass it with capture_env_vars)."
        )


def _slice_timeout() -> float:
    raw = settings.SLICE_TIMEOUT.value() or "300"
    try:
        timeout = float(raw)
    except ValueError:
        timeout = -1.0
    if timeout <= 0:
        raise ConfigError(
            f"{settings.SLICE_TIMEOUT.env} must be a positive number of seconds, got {raw!r}."
        )
    return timeout


def _jax_installed() -> bool:
    if "jax" in sys.modules:
        return True
    try:
        return importlib.util.find_spec("jax") is not None
    except (ImportError, ValueError):
        return False


def _code_imports_jax(code: types.CodeType) -> bool:
    """Whether ``code`` (or a function or class defined in it) imports JAX: an import
    statement names its module among the code's names (``jax``, ``jax.numpy``)."""
    if any(name == "jax" or name.startswith("jax.") for name in code.co_names):
        return True
    return any(_code_imports_jax(c) for c in code.co_consts if isinstance(c, types.CodeType))


def uses_jax(fn: object) -> bool:
    """Whether the job's function uses JAX: its modules imported JAX when the call was
    unpickled, or its own code imports it (``import jax`` in its body, the usual style)."""
    if "jax" in sys.modules:
        return True
    while isinstance(fn, functools.partial):
        fn = fn.func
    code = getattr(fn, "__code__", None)
    if code is None:  # a callable object: its class's __call__
        code = getattr(vars(type(fn)).get("__call__"), "__code__", None)
    return isinstance(code, types.CodeType) and _code_imports_jax(code)


def initialise_jax(
    host: SliceHost, fn: object, store: ObjectStore, job_id: str, say: Callable[[str], None]
) -> bool:
    """Join the slice's JAX processes before the function runs, when it uses JAX.

    However the function imports JAX (at module level, or inside its body), it would otherwise
    run as independent single hosts (``jax.process_count() == 1``) with nothing to say so. A
    function that does not use JAX is left alone: joining costs a JAX import and ties every
    host's exit to the others'. Never twice: a module that initialised JAX itself is left
    alone. All hosts must have started first (:func:`wait_for_slice`). On a CPU stand-in,
    cross-process collectives need gloo, which is set unless chosen already. The process
    environment already holds :meth:`SliceHost.environment` (set with the call's).
    """
    if settings.JAX_DISTRIBUTED.value() == "off" or not _jax_installed() or not uses_jax(fn):
        return False
    timeout = _slice_timeout()
    try:
        import jax
    except Exception as exc:
        raise SliceError(
            f"{host.label} cannot import JAX to join the slice: {exc!r}. Fix the job's JAX "
            f"install, or pass {settings.JAX_DISTRIBUTED.env}=off (with capture_env_vars) to "
            "set up jax.distributed in your function."
        ) from exc
    if jax.distributed.is_initialized():
        return False
    wait_for_slice(store, job_id, host, timeout)
    if getattr(jax.config, "jax_cpu_collectives_implementation", "gloo") in (None, "none"):
        jax.config.update("jax_cpu_collectives_implementation", "gloo")  # type: ignore[no-untyped-call]
    say(
        f"{host.label} joining jax.distributed at {host.coordinator} (a host that cannot "
        f"reach it within {timeout:g}s is stopped by JAX)"
    )
    jax.distributed.initialize(
        coordinator_address=host.coordinator,
        num_processes=host.count,
        process_id=host.index,
        initialization_timeout=max(1, round(timeout)),
    )
    return True
