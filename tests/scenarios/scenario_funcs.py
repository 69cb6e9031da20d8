"""User functions for the scenario suite, as a user's own module would define them.

The jobs import this module by name (``scenario_funcs``) from the code bundle, exactly as they
would import a module of a user's project, so nothing here may import test-only packages.
Functions that wait take a *gate*: a file path the test creates when the job may go on, so a
test observes a running job without sleeping.
"""

import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

__all__ = [
    "LoadsBadly",
    "ScenarioError",
    "end_by",
    "exit_process",
    "fail_on_host",
    "fail_or_hold",
    "add",
    "code_file_inode",
    "env_snapshot",
    "fail_with",
    "hold",
    "kinetic_modules",
    "print_then_hold",
    "return_generator",
    "return_lock",
    "spawn_child_and_hold",
    "write_output",
]

GATE_TIMEOUT_S = 60.0
"""A job never waits longer than this for its gate, so a broken test cannot leave it behind."""


class ScenarioError(Exception):
    """A user-defined exception type that the client must re-raise as itself."""

    def __init__(self, message: str, code: int) -> None:
        super().__init__(message, code)
        self.code = code

    def __str__(self) -> str:
        return f"{self.args[0]} (code {self.code})"


def _wait_for(gate: str) -> None:
    deadline = time.monotonic() + GATE_TIMEOUT_S
    while not os.path.exists(gate):
        if time.monotonic() > deadline:
            raise TimeoutError(f"gate {gate} never opened")
        time.sleep(0.005)


def add(a: int, b: int = 0) -> int:
    return a + b


def fail_on_host(host: int, message: str) -> None:
    """Raise on host ``host`` of a multi-host job only; every other host returns None."""
    if int(os.environ["KINETIC_HOST_INDEX"]) == host:
        raise ScenarioError(message, 1)


def fail_or_hold(host: int, message: str, gate: str) -> None:
    """Raise on host ``host`` of a multi-host job; every other host waits for ``gate``."""
    fail_on_host(host, message)
    _wait_for(gate)


def hold(gate: str, value: Any = None, started: str | None = None) -> Any:
    """Mark ``started`` (if given), wait for ``gate``, return ``value``."""
    if started:
        Path(started).write_text(str(os.getpid()))
    _wait_for(gate)
    return value


def print_then_hold(lines: list[str], gate: str) -> int:
    for line in lines:
        print(line, flush=True)
    _wait_for(gate)
    print("after the gate", flush=True)
    return len(lines)


def fail_with(message: str, code: int) -> None:
    raise ScenarioError(message, code)


def spawn_child_and_hold(pid_file: str) -> None:
    """Start a grandchild process, publish both pids, then run until killed."""
    child = subprocess.Popen([sys.executable, "-c", "import time\nwhile True: time.sleep(1)"])
    tmp = pid_file + ".tmp"
    Path(tmp).write_text(f"{os.getpid()} {child.pid}")
    os.replace(tmp, pid_file)
    deadline = time.monotonic() + GATE_TIMEOUT_S
    while time.monotonic() < deadline:
        time.sleep(0.05)
    child.kill()


def env_snapshot(prefix: str) -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k.startswith(prefix)}


def env_digests(prefix: str) -> dict[str, str]:
    """What ``env_snapshot`` sees, as sha256 digests: a result that shows a secret arrived
    without storing it."""
    import hashlib

    return {
        k: hashlib.sha256(v.encode()).hexdigest()
        for k, v in os.environ.items()
        if k.startswith(prefix)
    }


def write_output(name: str, text: str) -> dict[str, str]:
    """Write a file into ``KINETIC_OUTPUT_DIR`` and say where it went."""
    out = os.environ["KINETIC_OUTPUT_DIR"]
    path = Path(out, name)
    path.write_text(text)
    return {"output_dir": out, "path": str(path), "job_id": os.environ.get("KINETIC_JOB_ID", "")}


def code_file_inode() -> int:
    """The inode number of this module's file as the job sees it; the job also writes a file
    into its working directory."""
    Path("written-by-the-job.txt").write_text(os.environ.get("KINETIC_JOB_ID", ""))
    return os.stat(__file__).st_ino


def kinetic_modules() -> list[str]:
    """The ``kinetic*`` modules this job's process has loaded (this module loads none)."""
    return sorted(m for m in sys.modules if m.split(".")[0] in {"kinetic", "kinetic_runtime"})


def return_generator() -> Iterator[int]:
    return (i for i in range(3))


def return_lock() -> Any:
    return threading.Lock()


def exit_process(code: int) -> None:
    """Print, then end the job's process at once: no result is stored."""
    print(f"leaving with status {code}", flush=True)
    os._exit(code)


def exit_on_a_follower(code: int, gate: str) -> None:
    """Every host but the leader says so and exits with ``code`` at once; the leader waits
    for ``gate``, so a slice stopped at its first failure stops it before it says anything."""
    if os.environ.get("KINETIC_HOST_INDEX", "0") == "0":
        _wait_for(gate)
        print("the leader passed its gate", flush=True)
        return
    exit_process(code)


def _refuse_to_load() -> None:
    raise RuntimeError("this argument cannot be loaded inside the job")


class LoadsBadly:
    """An argument that pickles on the client and fails to unpickle in the job, so the job
    fails in its ``deserialize`` phase, before the function runs."""

    def __reduce__(self) -> tuple[Any, ...]:
        return (_refuse_to_load, ())


def end_by(how: str, gate: str = "") -> str:
    """``raise``: fail as the function; ``exit``: end the process without a result;
    ``hold``: wait for ``gate``; anything else: return it."""
    if how == "raise":
        raise ScenarioError("asked to fail", 3)
    if how == "exit":
        exit_process(5)
    if how == "hold":
        _wait_for(gate)
    return how


def print_lines(count: int) -> int:
    """Print ``count`` numbered lines (``line 0`` ... ), then return how many."""
    for number in range(count):
        print(f"line {number}")
    return count
