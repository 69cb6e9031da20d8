"""User code for ``test_host_groups``: programs as a user writes them for several hosts,
importing their frameworks inside the function and setting nothing up from Kinetic."""

import json
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

__all__ = [
    "PLACE",
    "TORCH_ENV",
    "count_per_host_with_checkpoints",
    "place",
    "say_then_fail_on_host_1",
    "slice_view",
    "train_from_checkpoint",
    "two_node_all_reduce",
    "two_node_psum",
]

TORCH_ENV = ("MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "RANK", "NODE_RANK", "LOCAL_RANK")
PLACE = (
    "KINETIC_HOST_INDEX",
    "KINETIC_SLICE_INDEX",
    "KINETIC_SLICE_HOST_INDEX",
    "MEGASCALE_NUM_SLICES",
    "MEGASCALE_SLICE_ID",
    "MEGASCALE_COORDINATOR_ADDRESS",
    "JAX_PROCESS_ID",
)


def _say(line: str) -> None:
    """Print ``line`` in one write: JAX's and PyTorch's gloo write to the same output from
    their own threads, and print's separate write of the newline lets their lines in between
    (a job's output is unbuffered, as under ``python -u``)."""
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def two_node_psum() -> dict[str, object]:
    """Two CPU devices per process; every device adds its process's ``index + 1``."""
    os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=2"
    import jax
    import jax.numpy as jnp

    jax.distributed.initialize()
    local = jax.local_device_count()
    mine = jnp.full((local,), float(jax.process_index() + 1))
    summed = jax.pmap(lambda x: jax.lax.psum(x, "i"), axis_name="i")(mine)
    torch_env = {name: os.environ[name] for name in TORCH_ENV}
    _say(f"host {jax.process_index()} torch {json.dumps(torch_env)}")
    return {
        "psum": float(summed[0]),
        "processes": jax.process_count(),
        "devices": jax.device_count(),
        "local_devices": local,
        "torch": torch_env,
    }


def slice_view() -> dict[str, object]:
    """What a multislice program looks at: its slice, the slices, every slice's devices."""
    os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=2"
    import jax

    jax.distributed.initialize()
    seen = {
        "slices": os.environ["MEGASCALE_NUM_SLICES"],
        "slice": os.environ["MEGASCALE_SLICE_ID"],
        "process": jax.process_index(),
        "devices": jax.device_count(),
    }
    _say(f"slice view {json.dumps(seen)}")
    return seen


def count_per_host_with_checkpoints(total: int, pause_at: list[int], gate: str) -> dict[str, Any]:
    """Each host adds up 1..``total``, saving a checkpoint of its own to ``KINETIC_OUTPUT_DIR``
    after every step and resuming from it; every host waits at each step of ``pause_at`` to be
    preempted there. Returns the host's final checkpoint."""
    import retry_userfuncs

    from kinetic_protocol import ObjectNotFoundError
    from kinetic_runtime.stores import open_store

    host = os.environ["KINETIC_HOST_INDEX"]
    store, key = open_store(os.environ["KINETIC_OUTPUT_DIR"]), f"checkpoint-host-{host}.json"
    try:
        checkpoint = json.loads(store.read(key))
    except ObjectNotFoundError:
        checkpoint = {"host": host, "step": 0, "sum": 0, "resumed_from": []}
    checkpoint["resumed_from"].append(checkpoint["step"])
    for step in range(checkpoint["step"] + 1, total + 1):
        checkpoint["step"], checkpoint["sum"] = step, checkpoint["sum"] + step
        store.write(key, json.dumps(checkpoint).encode())
        if step in pause_at:
            retry_userfuncs.hold_for_preemption(gate)
    return dict(checkpoint)


def train_from_checkpoint(checkpoint: str, started: str) -> dict[str, object]:
    """A program that resumes from its checkpoint: run 1 saves step 1 (host 0) and holds until
    the cluster stops it; host 1 marks ``started`` and raises when stopped (as a program that
    saves on SIGTERM and exits with an error does), so that run leaves host 1's failure
    stored. A later run finds the checkpoint and returns the step it resumed from."""
    saved = Path(checkpoint)
    run = os.environ["KINETIC_RESTART_ATTEMPT"]
    if saved.exists():
        saved_in, step = saved.read_text().split(":")
        if saved_in != run:
            return {"resumed_from": int(step), "run": run}
    if os.environ["KINETIC_HOST_INDEX"] == "0":
        partial = saved.with_suffix(".partial")
        partial.write_text(f"{run}:1")
        partial.rename(saved)
    else:

        def give_up(signum: int, frame: object) -> None:
            signal.signal(signal.SIGTERM, signal.SIG_IGN)  # once: let the failure be stored
            raise RuntimeError("host 1 was stopped")

        signal.signal(signal.SIGTERM, give_up)
        Path(started).write_text(str(os.getpid()))
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        time.sleep(0.005)
    return {"resumed_from": 0, "run": run}


def two_node_all_reduce() -> dict[str, object]:
    """PyTorch's gloo rendezvous from the environment alone; each host adds its ``rank + 1``."""
    import torch
    import torch.distributed as dist

    dist.init_process_group("gloo")
    value = torch.tensor([float(dist.get_rank() + 1)])
    dist.all_reduce(value)
    seen = {"sum": value.item(), "rank": dist.get_rank(), "world": dist.get_world_size()}
    dist.destroy_process_group()
    _say(f"host {seen['rank']} all_reduce {json.dumps(seen)}")
    return {**seen, "torch": torch.__file__}


def place() -> dict[str, str]:
    """The host's place as the environment gives it, printed to its own log."""
    seen = {name: os.environ.get(name, "") for name in PLACE}
    _say(f"place {json.dumps(seen)}")
    return seen


def say_then_fail_on_host_1(said: str) -> str:
    """Each host says who it is; host 1 then raises (host 0 is stopped with it), once host 0
    has said its line (``said`` marks it): a host is stopped at once when another fails."""
    host = os.environ["KINETIC_HOST_INDEX"]
    _say(f"host {host} was here")
    if host == "0":
        Path(said).touch()
    else:
        deadline = time.monotonic() + 120
        while not os.path.exists(said) and time.monotonic() < deadline:
            time.sleep(0.005)
        raise RuntimeError("host 1 gave up")
    return host
