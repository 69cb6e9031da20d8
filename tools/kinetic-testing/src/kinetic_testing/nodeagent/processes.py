"""One pod's container process: a local process group, its log file, its kill schedule.

Each process runs in its own session so a kill reaches everything it spawned; stdout and stderr
go to one log file (the kubelet's CRI log, read back by the log server). A pod's
``python -m kinetic_runtime`` is forked from a warm interpreter where that is the same process
(:mod:`.warm`).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from pathlib import Path

from kinetic_runtime.local.processes import await_group_gone

from .warm import WarmChild, warm_start

__all__ = ["PodProcess"]


class PodProcess:
    """A started container process; ``exit_code`` is the kubelet's (128+signal if killed)."""

    def __init__(self, argv: list[str], env: dict[str, str], cwd: Path, log_path: Path) -> None:
        self.log_path = log_path
        warm = warm_start(argv, env, cwd, log_path)
        self._popen: subprocess.Popen[bytes] | WarmChild = (
            warm if warm is not None else _new_interpreter(argv, env, cwd, log_path)
        )
        self.pid = self._popen.pid
        self.kill_at: float | None = None
        """Monotonic deadline after which a terminating process gets SIGKILL."""

    @property
    def exit_code(self) -> int | None:
        """None while running; negative return codes (signals) become 128+signal."""
        code = self._popen.poll()
        if code is None:
            return None
        return 128 - code if code < 0 else code

    def _signal(self, sig: signal.Signals) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, sig)

    def terminate(self, grace: float) -> None:
        """SIGTERM the group now; :meth:`enforce` sends SIGKILL once ``grace`` has passed."""
        if self.kill_at is None:
            self._signal(signal.SIGTERM)
            self.kill_at = time.monotonic() + grace

    def kill(self) -> None:
        """SIGKILL the group (OOM killer, hard eviction, lost VM)."""
        self._signal(signal.SIGKILL)
        self.kill_at = time.monotonic()

    def enforce(self) -> None:
        """Send the overdue SIGKILL of a terminating process."""
        overdue = self.kill_at is not None and time.monotonic() >= self.kill_at
        if overdue and self._popen.poll() is None:
            self._signal(signal.SIGKILL)

    def await_group_exit(self, timeout: float) -> bool:
        """Wait up to ``timeout`` until no process of the container's group runs (a zombie has
        ended); whether none does. A container's processes die with its first one (its PID
        namespace's init), and a runtime reports the container exited only then: a signalled
        process on a loaded machine may still be running when its group's leader is reaped."""
        return await_group_gone(self.pid, timeout, poll_interval=0.02)

    def reap(self, timeout: float) -> None:
        """Kill the whole group and wait up to ``timeout`` for the leader (agent stop, pod
        gone). A leader not reaped by then (a loaded machine) is left to a thread that waits
        for it: the process is dying, and a dropped ``Popen`` of an unreaped child warns
        "subprocess ... is still running" in whatever test runs when it is collected."""
        self._signal(signal.SIGKILL)
        try:
            self._popen.wait(timeout)
        except subprocess.TimeoutExpired:
            threading.Thread(target=self._popen.wait, name="nodeagent-reap", daemon=True).start()


def _new_interpreter(
    argv: list[str], env: dict[str, str], cwd: Path, log_path: Path
) -> subprocess.Popen[bytes]:
    with open(log_path, "ab") as log:
        return subprocess.Popen(
            argv,
            env=env,
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
