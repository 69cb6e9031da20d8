"""A multi-host job's hosts start once each, wait for each other, and join JAX's processes.

A backend starts one runtime per host with ``KINETIC_NUM_HOSTS`` set; where each host sits
comes from the variables :mod:`kinetic_runtime.host_place` describes.
"""

from __future__ import annotations

import functools
import importlib.util
import sys
import time
import types
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Literal

from kinetic_protocol import ConfigError, HostStart, ObjectStore, PreconditionFailedError, layout
from kinetic_protocol.records import decode_json, encode_json
from kinetic_runtime import settings
from kinetic_runtime.host_place import COORDINATOR_PORT, SliceHost

__all__ = [
    "COORDINATOR_PORT",
    "SliceError",
    "SliceHost",
    "claim_host",
    "initialise_jax",
    "wait_for_slice",
]

Claim = Literal["run", "restarted", "replaced"]
_POLL_S = 0.5


class SliceError(RuntimeError):
    """This host could not join the other hosts of its slice, so the function did not run."""


def claim_host(store: ObjectStore, job_id: str, host: SliceHost) -> Claim:
    """Record that ``host`` starts the job; say if it had started before.

    ``restarted``: the same pod ran it already (its container exited and Kubernetes restarted
    it); ``replaced``: another pod did (Kubernetes replaced an evicted or lost pod). Either
    way the function must not run again: Kinetic, not Kubernetes, decides what re-runs. A
    new run of the whole group (``host.run``: JobSet's restart after a preemption) claims
    its hosts anew.
    """
    key = layout.host_started_key(job_id, host.index, host.run)
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
        missing = [
            i for i in missing if not store.exists(layout.host_started_key(job_id, i, host.run))
        ]
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


def _code_initialises_jax(code: types.CodeType) -> bool:
    """Whether ``code`` (or code defined in it) calls ``jax.distributed.initialize`` itself:
    the attribute names it reads include ``distributed`` and ``initialize``."""
    names = set(code.co_names)
    if "initialize" in names and names & {"distributed", "jax.distributed"}:
        return True
    return any(_code_initialises_jax(c) for c in code.co_consts if isinstance(c, types.CodeType))


def _function_code(fn: object) -> types.CodeType | None:
    while isinstance(fn, functools.partial):
        fn = fn.func
    code = getattr(fn, "__code__", None)
    if code is None:  # a callable object: its class's __call__
        code = getattr(vars(type(fn)).get("__call__"), "__code__", None)
    return code if isinstance(code, types.CodeType) else None


def uses_jax(fn: object) -> bool:
    """Whether the job's function uses JAX: its modules imported JAX when the call was
    unpickled, or its own code imports it (``import jax`` in its body, the usual style)."""
    if "jax" in sys.modules:
        return True
    code = _function_code(fn)
    return code is not None and _code_imports_jax(code)


def initialises_jax(fn: object) -> bool:
    """Whether the function calls ``jax.distributed.initialize()`` in its own code (the
    runtime must not call it first: JAX refuses a second call)."""
    code = _function_code(fn)
    return code is not None and _code_initialises_jax(code)


def initialise_jax(
    host: SliceHost, fn: object, store: ObjectStore, job_id: str, say: Callable[[str], None]
) -> bool:
    """Join the slice's JAX processes before the function runs, when it uses JAX.

    However the function imports JAX (at module level, or inside its body), it would otherwise
    run as independent single hosts (``jax.process_count() == 1``) with nothing to say so. A
    function that does not use JAX is left alone: joining costs a JAX import and ties every
    host's exit to the others'. Never twice: a module that initialised JAX itself is left
    alone, and so is a function that calls ``jax.distributed.initialize`` in its own code
    (JAX refuses a second call; :mod:`kinetic_runtime.jax_cluster` makes its call with no
    arguments join the hosts). All hosts must have started first (:func:`wait_for_slice`).
    On a CPU stand-in, cross-process collectives need gloo, which is set unless chosen
    already. The process environment already holds :meth:`SliceHost.environment`.
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
    if initialises_jax(fn):
        say(
            f"{host.label}: the function calls jax.distributed.initialize itself; with no "
            "arguments it joins this job's hosts"
        )
        return False
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
