"""How the hosts of a local multi-host job share this machine's GPUs.

Each host of a local slice is its own process with its own framework runtime. Two processes on
one CUDA device make NCCL refuse the collective ("Duplicate GPU detected"), so each host gets
devices of its own through ``CUDA_VISIBLE_DEVICES``. With fewer devices than hosts no such
split exists: the hosts then run on the CPU, and each host's log says so and why.

Local jobs also share this machine's GPUs with each other (a batch runs several at once) and
with the submitter's own process. JAX takes 75% of a GPU's memory when it starts, and
TensorFlow all of it, so the second job on a GPU ran out of memory: local jobs allocate as they
go instead (:data:`ON_DEMAND_MEMORY`), unless the job's environment says otherwise.
"""

import os
from collections.abc import Mapping
from typing import NamedTuple

__all__ = ["ON_DEMAND_MEMORY", "HostDevices", "host_devices", "visible_gpus"]

ON_DEMAND_MEMORY = {"XLA_PYTHON_CLIENT_PREALLOCATE": "false", "TF_FORCE_GPU_ALLOW_GROWTH": "true"}
"""A local job's defaults on a machine with GPUs: memory taken as needed, not all at start
(a captured variable of the same name wins). PyTorch allocates as it goes already."""


def visible_gpus(env: Mapping[str, str], dev: str = "/dev") -> list[str]:
    """The CUDA devices a job's process would see: those ``CUDA_VISIBLE_DEVICES`` lists when it
    is set (CUDA stops at the first ``-1``), else one per ``/dev/nvidiaN`` device file."""
    listed = env.get("CUDA_VISIBLE_DEVICES")
    if listed is not None:
        devices = []
        for entry in (part.strip() for part in listed.split(",")):
            if not entry or entry == "-1":
                break
            devices.append(entry)
        return devices
    try:
        names = os.listdir(dev)
    except OSError:
        return []
    numbers = sorted(int(n[6:]) for n in names if n.startswith("nvidia") and n[6:].isdigit())
    return [str(n) for n in numbers]


class HostDevices(NamedTuple):
    """What one host of a slice is given: variables for its environment, and a line for its log
    (empty when there is nothing to say). The supervisor imports this module: standard library
    only, and light."""

    env: dict[str, str] = {}  # noqa: RUF012 (a NamedTuple's default is never mutated here)
    notice: str = ""


def host_devices(gpus: list[str], hosts: int, host: int, env: Mapping[str, str]) -> HostDevices:
    """Host ``host``'s share of ``gpus`` among ``hosts`` hosts: an equal, contiguous block each
    when every host can have one; the CPU for all of them when not."""
    if hosts < 2 or not gpus:
        return HostDevices()
    if len(gpus) >= hosts:
        per_host = len(gpus) // hosts
        mine = gpus[host * per_host : (host + 1) * per_host]
        unused = len(gpus) - per_host * hosts
        spare = f"; {unused} left unused so that every host has as many" if unused else ""
        return HostDevices(
            env={"CUDA_VISIBLE_DEVICES": ",".join(mine)},
            notice=(
                f"host {host} of {hosts} uses GPU {', '.join(mine)} of this machine's "
                f"{len(gpus)} (CUDA_VISIBLE_DEVICES){spare}"
            ),
        )
    cpu_only = {"CUDA_VISIBLE_DEVICES": ""}
    if "JAX_PLATFORMS" not in env:
        cpu_only["JAX_PLATFORMS"] = "cpu"
    return HostDevices(
        env=cpu_only,
        notice=(
            f"{hosts} hosts but {len(gpus)} GPU(s) on this machine, and two hosts cannot share "
            f"one GPU, so every host runs on the CPU (CUDA_VISIBLE_DEVICES is empty). To use "
            f"GPUs locally, run on a machine with at least {hosts}, or choose a one-host "
            f"accelerator"
        ),
    )
