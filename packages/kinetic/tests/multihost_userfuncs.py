"""User code for ``test_local_multihost``: jobs import it by name from the code bundle, so it
imports nothing test-only (and not JAX: see ``multihost_jax_userfuncs``)."""

import os
import time
from pathlib import Path

__all__ = [
    "fail_on_host",
    "gpu_memory_view",
    "gpu_view",
    "hang_unless_failing",
    "host_and_count",
    "say_lines",
]


def _host() -> int:
    return int(os.environ.get("KINETIC_HOST_INDEX", "0"))


def host_and_count() -> tuple[str, str]:
    return os.environ["KINETIC_HOST_INDEX"], os.environ["KINETIC_NUM_HOSTS"]


def gpu_view() -> tuple[str | None, str | None]:
    """What this host was given of the machine's GPUs, printed to its log and returned."""
    view = os.environ.get("CUDA_VISIBLE_DEVICES"), os.environ.get("JAX_PLATFORMS")
    print(f"host {_host()} sees CUDA_VISIBLE_DEVICES={view[0]!r} JAX_PLATFORMS={view[1]!r}")
    return view


def gpu_memory_view() -> tuple[str | None, str | None]:
    """How the frameworks in this job would take GPU memory."""
    return os.environ.get("XLA_PYTHON_CLIENT_PREALLOCATE"), os.environ.get(
        "TF_FORCE_GPU_ALLOW_GROWTH"
    )


def fail_on_host(host: int) -> str:
    if _host() == host:
        raise RuntimeError(f"host {host} gave up")
    return "done"


def hang_unless_failing(host: int, marker: str) -> None:
    """Host ``host`` fails once another host has created ``marker``; that host then runs for
    an hour unless it is stopped."""
    path = Path(marker)
    if _host() == host:
        deadline = time.monotonic() + 120
        while not path.exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        raise RuntimeError(f"host {host} gave up")
    print(f"host {_host()} hangs", flush=True)
    path.touch()
    time.sleep(3600)


def say_lines(count: int) -> int:
    for line in range(count):
        print(f"line {line} from host {_host()}", flush=True)
    return _host()
