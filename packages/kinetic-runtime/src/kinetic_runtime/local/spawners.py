"""How a dispatcher starts a job's supervisor (a ``dispatch.Spawn``).

``forked``: a fork of the dispatcher (the launcher, the keeper, or a supervisor whose job just
ended), detached by a double fork into a session of its own, with only the slot and the answer
pipe open, from a fresh stack (``fork_from_fresh_stack``); it waits until the supervisor says
whether it claimed the job. The client never dispatches (``kinetic.local.line``).
"""

import contextlib
import os
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kinetic_runtime.local import supervisor
from kinetic_runtime.local.dispatch import Spawn
from kinetic_runtime.local.hosts import StartRuntime
from kinetic_runtime.private_files import open_private

__all__ = ["fork_from_fresh_stack", "forked", "runtime_start"]

SUPERVISOR_LOG = "supervisor.log"


def runtime_start(warm: StartRuntime | None) -> Callable[[dict[str, Any]], StartRuntime]:
    """How a forked supervisor starts a job's runtime: ``warm`` (a fork) when the job runs in
    this interpreter, else a fresh one in the job's own."""

    def start_for(launch: dict[str, Any]) -> StartRuntime:
        if warm is not None and launch.get("python") == sys.executable:
            return warm
        return supervisor.exec_runtime

    return start_for


def _answer(read_end: int) -> bool:
    with os.fdopen(read_end, "rb") as pipe:
        return pipe.read(1) == b"1"


def _close_all_but(keep: list[int]) -> None:
    """Close every descriptor above stderr but ``keep``: an inherited lock (the dispatcher's)
    would otherwise stay held for as long as the job runs."""
    low = 3
    for fd in sorted(keep):
        os.closerange(low, fd)
        low = fd + 1
    os.closerange(low, 1 << 20)


def fork_from_fresh_stack(run: Callable[[], int]) -> None:
    """Fork a child that runs ``run`` and exits with its code, with none of this stack.

    A forked child carries its parent's Python stack: a supervisor that starts the next job's
    supervisor from inside its own would hand down one job's frames more each time, and the
    200th job of a chain would die of ``RecursionError``. Forked from a new thread, the child
    has that thread's stack only, and it is the child's main thread (signal handlers work)."""

    def fork_here() -> None:
        if os.fork() == 0:
            code = 1
            try:
                code = run()
            finally:
                os._exit(code)

    thread = threading.Thread(target=fork_here, name="kinetic-fork")
    thread.start()
    thread.join()


def forked(start_for: Callable[[dict[str, Any]], StartRuntime]) -> Spawn:
    def spawn(job_dir: Path, launch: dict[str, Any], slot: int) -> bool:
        start = start_for(launch)
        read_end, write_end = os.pipe()

        def run_supervisor() -> int:
            _close_all_but([slot, write_end])
            os.setsid()
            null = os.open(os.devnull, os.O_RDWR)
            errors = open_private(job_dir / SUPERVISOR_LOG, os.O_WRONLY | os.O_APPEND)
            for target, fd in ((0, null), (1, null), (2, errors)):
                os.dup2(fd, target)
            return supervisor.supervise(job_dir, slot, start=start, report=write_end)

        middle = os.fork()
        if middle == 0:
            try:
                fork_from_fresh_stack(run_supervisor)
            finally:
                os._exit(0)  # the supervisor is orphaned to init, like a daemon
        os.close(write_end)
        with contextlib.suppress(ChildProcessError):  # a launcher ignores SIGCHLD
            os.waitpid(middle, 0)
        return _answer(read_end)

    return spawn
