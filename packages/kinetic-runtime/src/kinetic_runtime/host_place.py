"""Where this process sits in a multi-host job, and the variables every framework reads from
it: JAX's multi-process and multislice set-up, and PyTorch's ``env://`` rendezvous.

What a backend sets on each host (one runtime per host; names are also in ``settings``):

``KINETIC_NUM_HOSTS``
    All hosts of the job: ``nodes * slices * hosts-per-slice`` (``4``). Above 1 the runtime
    treats the process as one host of a group; 1 or unset, as a single-host job.
``KINETIC_NUM_SLICES``
    The job's slices (``slices=``; default ``1``). A slice is what one Job of a JobSet runs: a
    TPU slice, or, for GPU and CPU jobs, all their nodes. It must divide ``KINETIC_NUM_HOSTS``.
The host's index, one of:
    ``KINETIC_HOST_INDEX``, the global index ``0..N-1`` (host 0 coordinates; the local
    backend sets it); or ``KINETIC_SLICE_INDEX`` with ``KINETIC_SLICE_HOST_INDEX`` (the
    Indexed Job's ``JOB_COMPLETION_INDEX`` when unset), the global index then being
    ``slice * hosts-per-slice + host-in-slice``, which a JobSet pod takes from its labels
    ``jobset.sigs.k8s.io/job-global-index`` and ``batch.kubernetes.io/job-completion-index``
    through the downward API; or, for a single slice only, ``LWS_WORKER_INDEX`` or
    ``TPU_WORKER_ID`` (both count within one slice).
``KINETIC_COORDINATOR_ADDRESS``
    ``HOST:PORT`` of host 0's JAX coordinator, the same on every host: on a JobSet, host 0's
    stable name ``<jobset>-<replicatedjob>-0-0.<jobset>:8476``; locally ``127.0.0.1:<free>``.
    A LeaderWorkerSet pod may leave it to ``LWS_LEADER_ADDRESS`` (port 8476).
``KINETIC_TORCH_PORT``, ``KINETIC_MEGASCALE_PORT``
    Host 0's ports for PyTorch's rendezvous (default 29500) and JAX multislice (default
    8080): set them where hosts share one network (local processes).
``KINETIC_HOST_INSTANCE``
    What runs this host (the pod's uid), so a restart is told from a replacement.

From those the function sees :meth:`SliceHost.environment`: JAX's ``JAX_COORDINATOR_ADDRESS``,
``JAX_NUM_PROCESSES``, ``JAX_PROCESS_ID``; PyTorch's ``MASTER_ADDR``, ``MASTER_PORT``,
``WORLD_SIZE``, ``RANK``, ``NODE_RANK``, ``LOCAL_RANK`` and ``LOCAL_WORLD_SIZE`` (one process per
host); with several slices ``MEGASCALE_COORDINATOR_ADDRESS``, ``MEGASCALE_NUM_SLICES``,
``MEGASCALE_SLICE_ID`` and ``MEGASCALE_PORT``; and Kinetic's own place variables.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from kinetic_protocol import ConfigError
from kinetic_protocol.host_groups import COORDINATOR_PORT
from kinetic_protocol.settings import SettingSpec
from kinetic_runtime import settings

__all__ = ["COORDINATOR_PORT", "MEGASCALE_PORT", "TORCH_PORT", "SliceHost"]

TORCH_PORT = 29500
"""PyTorch's conventional rendezvous port (``torchrun``'s default)."""
MEGASCALE_PORT = 8080
"""The port of JAX multislice's coordinator that GKE's multislice examples open."""


def _integer(name: str, raw: str) -> int:
    try:
        return int(raw)
    except ValueError:
        raise ConfigError(f"{name} must be an integer, got {raw!r}.") from None


def _first_set(env: Mapping[str, str], names: tuple[str, ...]) -> str | None:
    return next((name for name in names if env.get(name)), None)


def _host_index(env: Mapping[str, str], count: int, slices: int) -> tuple[str, int]:
    """``(where it came from, global index)`` of this host (see the module docstring)."""
    if env.get(settings.HOST_INDEX.env):
        return settings.HOST_INDEX.env, _integer(
            settings.HOST_INDEX.env, env[settings.HOST_INDEX.env]
        )
    in_slice_var = _first_set(
        env, (settings.SLICE_HOST_INDEX.env, *settings.SLICE_HOST_INDEX.fallback_env)
    )
    if env.get(settings.SLICE_INDEX.env) and in_slice_var:
        slice_index = _integer(settings.SLICE_INDEX.env, env[settings.SLICE_INDEX.env])
        if not 0 <= slice_index < slices:
            raise ConfigError(
                f"{settings.SLICE_INDEX.env}={slice_index} is outside 0..{slices - 1}."
            )
        per_slice = count // slices
        in_slice = _integer(in_slice_var, env[in_slice_var])
        if not 0 <= in_slice < per_slice:
            raise ConfigError(f"{in_slice_var}={in_slice} is outside 0..{per_slice - 1}.")
        return f"{settings.SLICE_INDEX.env} and {in_slice_var}", slice_index * per_slice + in_slice
    in_one_slice = _first_set(env, settings.HOST_INDEX.fallback_env) if slices == 1 else None
    if in_one_slice is None:
        raise ConfigError(
            f"This job spans {count} hosts but no host index is set ({settings.HOST_INDEX.env}"
            f", or {settings.SLICE_INDEX.env} with {settings.SLICE_HOST_INDEX.env}"
            + (", LWS_WORKER_INDEX or TPU_WORKER_ID)." if slices == 1 else ").")
        )
    return in_one_slice, _integer(in_one_slice, env[in_one_slice])


def _port(spec: SettingSpec, env: Mapping[str, str], default: int) -> int:
    port = _integer(spec.env, spec.value(env) or str(default))
    if not 0 < port < 65536:
        raise ConfigError(f"{spec.env}={port} is not a port (1..65535).")
    return port


@dataclass(frozen=True)
class SliceHost:
    """One host of a multi-host job: its global index among ``count`` hosts in ``slices``
    slices of ``count // slices`` hosts each."""

    index: int
    count: int
    coordinator: str
    """``HOST:PORT`` of the leader's JAX coordinator."""
    instance: str
    slices: int = 1
    run: int = 0
    """Which run of the group this is (``KINETIC_RESTART_ATTEMPT``)."""
    torch_port: int = TORCH_PORT
    megascale_port: int = MEGASCALE_PORT

    @property
    def is_leader(self) -> bool:
        return self.index == 0

    @property
    def label(self) -> str:
        return f"host {self.index} of {self.count}"

    @property
    def hosts_per_slice(self) -> int:
        return self.count // self.slices

    @property
    def slice_index(self) -> int:
        return self.index // self.hosts_per_slice

    @property
    def leader_host(self) -> str:
        """Host 0's address without its port."""
        return self.coordinator.rsplit(":", 1)[0]

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> SliceHost | None:
        """The host this process is, or None for a single-host job."""
        env = os.environ if environ is None else environ
        count = _integer(settings.NUM_HOSTS.env, settings.NUM_HOSTS.value(env) or "1")
        if count <= 1:
            return None
        slices = _integer(settings.NUM_SLICES.env, settings.NUM_SLICES.value(env) or "1")
        if slices < 1 or count % slices:
            raise ConfigError(
                f"{settings.NUM_SLICES.env}={slices} must be a positive divisor of "
                f"{settings.NUM_HOSTS.env}={count} (every slice has as many hosts)."
            )
        source, index = _host_index(env, count, slices)
        if not 0 <= index < count:
            raise ConfigError(f"{source}={index} is outside 0..{count - 1}.")
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
        return cls(
            index=index,
            count=count,
            coordinator=coordinator,
            instance=instance,
            slices=slices,
            run=_integer(settings.RESTART_ATTEMPT.env, settings.RESTART_ATTEMPT.value(env) or "0"),
            torch_port=_port(settings.TORCH_PORT, env, TORCH_PORT),
            megascale_port=_port(settings.MEGASCALE_PORT, env, MEGASCALE_PORT),
        )

    def environment(self) -> dict[str, str]:
        """What the function sees: its place, and what each framework's set-up reads, so
        ``jax.distributed.initialize()`` and ``torch.distributed.init_process_group()`` need
        no arguments (one process per host: local rank 0 of 1)."""
        index, count = str(self.index), str(self.count)
        env = {
            settings.HOST_INDEX.env: index,
            settings.NUM_HOSTS.env: count,
            settings.NUM_SLICES.env: str(self.slices),
            settings.SLICE_INDEX.env: str(self.slice_index),
            settings.SLICE_HOST_INDEX.env: str(self.index % self.hosts_per_slice),
            "JAX_COORDINATOR_ADDRESS": self.coordinator,
            "JAX_NUM_PROCESSES": count,
            "JAX_PROCESS_ID": index,
            "MASTER_ADDR": self.leader_host,
            "MASTER_PORT": str(self.torch_port),
            "WORLD_SIZE": count,
            "RANK": index,
            "NODE_RANK": index,
            "LOCAL_RANK": "0",
            "LOCAL_WORLD_SIZE": "1",
        }
        if self.slices > 1:
            env |= {
                "MEGASCALE_COORDINATOR_ADDRESS": self.leader_host,
                "MEGASCALE_NUM_SLICES": str(self.slices),
                "MEGASCALE_SLICE_ID": str(self.slice_index),
                "MEGASCALE_PORT": str(self.megascale_port),
            }
        return env
