"""Functions the CLI tests submit as real jobs on the local backend.

Imported by name from this directory (the conftest puts it on ``sys.path``), so the job's
bundle carries it and the detached runtime process imports it the same way.
"""

import os
import time

import kinetic

GATE_TIMEOUT = 60.0


@kinetic.run(accelerator="cpu", backend="local")
def add(a: int, b: int) -> int:
    print(f"adding {a} and {b}")
    print("done adding")
    return a + b


@kinetic.run(accelerator="cpu", backend="local")
def fail(message: str) -> None:
    print("about to fail")
    raise ValueError(message)


@kinetic.run(accelerator="cpu", backend="local")
def opaque() -> set[int]:
    """A value JSON cannot hold."""
    return {1, 2, 3}


@kinetic.run(accelerator="cpu", backend="local")
def gated(gate: str) -> str:
    """Runs until the file ``gate`` exists, so a test decides when the job ends."""
    print("waiting for the gate", flush=True)
    deadline = time.monotonic() + GATE_TIMEOUT
    while not os.path.exists(gate):
        if time.monotonic() > deadline:
            raise TimeoutError(f"nobody created {gate}")
        time.sleep(0.01)
    print("gate opened", flush=True)
    return "opened"


@kinetic.run(accelerator="cpu", backend="local")
def square_unless_two(x: int) -> int:
    if x == 2:
        print("two is refused")
        raise RuntimeError("two is not allowed")
    return x * x


@kinetic.run(accelerator="cpu", backend="local")
def fail_saying(text: str) -> None:
    """Fails with ``text`` in its log and its error: what a hostile store could hold."""
    print(text)
    raise RuntimeError(text)


@kinetic.run(accelerator="tpu-v5litepod-2x4", backend="local")
def greet_from_each_host() -> str:
    """A two-host job: each host prints its index; the leader's value is returned."""
    host = os.environ["KINETIC_HOST_INDEX"]
    print(f"hello from host {host}", flush=True)
    return host


@kinetic.run(accelerator="cpu", backend="local")
def square_or_die(x: int) -> int:
    """Input 1 raises; input 2's process dies without storing a result."""
    if x == 1:
        print("one is refused", flush=True)
        raise RuntimeError("one is not allowed")
    if x == 2:
        print("two dies", flush=True)
        os._exit(3)
    return x * x


@kinetic.run(accelerator="cpu", nodes=2, backend="local")
def host_of_two_nodes() -> str:
    return os.environ["KINETIC_HOST_INDEX"]
