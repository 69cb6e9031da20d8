"""Start a pod's ``python -m kinetic_runtime`` by a fork of a warm interpreter
(:mod:`kinetic_testing.warm_pods`) instead of a new one, where the two are the same process.

They are the same where the pod would run this machine's interpreter (not an image of its own
or another interpreter), directly or after entering its volumes' mount namespace
(``kinetic_testing.enter_mounts``, done in the fork): the fork gets the pod's argv,
environment, working directory, session and log as an ``exec`` would, and imports the runtime
and the job afresh. What it shares with its starter is the GCS client library already loaded
and the interpreter's start-up state, so a starter serves only pods whose start-up settings
are its own (``PYTHON*``, locale, ``HOME``, and what the library reads at import); pods with
other settings get a starter of their own. One difference remains: pods forked from one
starter share its string hash seed, where new interpreters would each draw one.

``KINETIC_TEST_COLD_PODS=1`` starts every pod as a new interpreter.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import select
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Mapping
from pathlib import Path

from kinetic_testing import warm_pods

__all__ = ["WarmChild", "warm_start"]

_MODULE = "kinetic_runtime"
_ENTER_MOUNTS = "kinetic_testing.enter_mounts"
_SETTING_PREFIXES = ("PYTHON", "LC_", "GRPC_", "CLOUDSDK_", "GOOGLE_API_", "OTEL_")
_SETTING_NAMES = frozenset(
    {
        "LANG",
        "HOME",
        # What the preloaded library reads as it is imported (a test keeps this list whole).
        "API_ENDPOINT_OVERRIDE",
        "API_VERSION_OVERRIDE",
        "ENABLE_GCS_PYTHON_CLIENT_OTEL_TRACES",
        "PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION",
        "TEMPORARILY_DISABLE_PROTOBUF_VERSION_CHECK",
    }
)
"""The environment a pod's interpreter starts with and its preloaded library reads: a pod
whose values differ from a starter's gets another starter."""
_READY_TIMEOUT_S = 60.0


class WarmChild:
    """A forked pod process, as much of ``subprocess.Popen`` as the kubelet uses.

    The starter answers on the connection: the pod's pid, then its exit code. The kubelet's
    loop and the log server's threads poll one child at once, so one thread at a time reads
    the answer and the exit code is kept, as ``Popen`` keeps the status it reaped: two
    readers of one line would leave the second an empty one (an exit code of -9)."""

    def __init__(self, connection: socket.socket) -> None:
        """Wait for the starter's first line, the pod's pid."""
        self._connection = connection
        self._answer = b""
        self._lock = threading.Lock()
        self.returncode: int | None = None
        while b"\n" not in self._answer and self._receive(block=True):
            pass
        pid = self._answer.partition(b"\n")[0]
        if not pid.strip():
            raise OSError("the warm pod starter did not start the pod")
        self.pid = int(pid)

    def poll(self) -> int | None:
        if self.returncode is None and self._lock.acquire(blocking=False):
            try:
                self._take_answer()
            finally:
                self._lock.release()
        return self.returncode  # None too while another thread waits, as Popen's does

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        if not self._lock.acquire(timeout=-1 if timeout is None else timeout):
            raise subprocess.TimeoutExpired(f"pod process {self.pid}", timeout or 0.0)
        try:
            while self.returncode is None:
                left = None if deadline is None else max(0.0, deadline - time.monotonic())
                if not select.select([self._connection], [], [], left)[0]:
                    raise subprocess.TimeoutExpired(f"pod process {self.pid}", timeout or 0.0)
                self._take_answer()
        finally:
            self._lock.release()
        return self.returncode

    def _take_answer(self) -> None:
        """Read what the starter has sent, without waiting; the exit code once it is there."""
        while self._receive(block=False):
            pass
        lines = self._answer.split(b"\n")
        if len(lines) > 2:
            self.returncode = int(lines[1])
        elif self._connection.fileno() == -1:
            # The starter died with the process unreported: as a runtime that lost its shim.
            self.returncode = -9
        if self.returncode is not None:
            self._connection.close()

    def _receive(self, *, block: bool) -> bool:
        """Add what has arrived to the answer; whether more may come now. The end of the
        answer closes the connection."""
        if self._connection.fileno() == -1:
            return False
        try:
            data = self._connection.recv(4096, 0 if block else socket.MSG_DONTWAIT)
        except BlockingIOError:
            return False
        except OSError:
            data = b""
        if not data:
            self._connection.close()
            return False
        self._answer += data
        return True


class _Starter:
    """One warm interpreter, started with the given start-up settings."""

    def __init__(self, settings: Mapping[str, str]) -> None:
        self._directory = tempfile.mkdtemp(prefix="kinetic-warm-pods-")
        self.path = os.path.join(self._directory, "starter.sock")
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), **settings}
        with open(os.path.join(self._directory, "starter.log"), "ab") as log:
            self._process = subprocess.Popen(
                [sys.executable, "-m", warm_pods.__name__, self.path],
                stdin=subprocess.PIPE,  # its end: this process's
                stdout=subprocess.PIPE,
                stderr=log,
                env=env,
            )
        assert self._process.stdout is not None
        ready = select.select([self._process.stdout], [], [], _READY_TIMEOUT_S)[0]
        if not ready or self._process.stdout.readline() != warm_pods.READY:
            self.close()
            raise OSError(f"the warm pod starter did not start (see {self._directory})")

    def start(
        self, argv: list[str], mounts: object, env: Mapping[str, str], cwd: Path, log: Path
    ) -> WarmChild:
        connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            connection.connect(self.path)
            connection.sendall(warm_pods.request(argv, env, str(cwd), str(log), mounts))
            return WarmChild(connection)
        except BaseException:
            connection.close()
            raise

    def alive(self) -> bool:
        return self._process.poll() is None

    def close(self) -> None:
        for pipe in (self._process.stdin, self._process.stdout):
            with contextlib.suppress(OSError):
                assert pipe is not None
                pipe.close()  # the starter ends when its input does
        with contextlib.suppress(subprocess.TimeoutExpired):
            self._process.wait(timeout=2.0)
        if self._process.poll() is None:
            self._process.kill()
            self._process.wait()
        shutil.rmtree(self._directory, ignore_errors=True)


_starters: dict[tuple[tuple[str, str], ...], _Starter] = {}
_lock = threading.Lock()


def _settings(env: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    return tuple(
        sorted(
            (key, value)
            for key, value in env.items()
            if key in _SETTING_NAMES or key.startswith(_SETTING_PREFIXES)
        )
    )


def warm_start(argv: list[str], env: Mapping[str, str], cwd: Path, log: Path) -> WarmChild | None:
    """The pod's process forked from a warm interpreter, or None where it must be a new one
    (another command, another interpreter, warm starts turned off, or no starter to be had:
    the pod then runs all the same)."""
    command = None if warm_pods.COLD else _runtime_command(argv)
    if command is None:
        return None
    settings = _settings(env)
    try:
        with _lock:
            starter = _starters.get(settings)
            if starter is None or not starter.alive():
                starter = _starters[settings] = _Starter(dict(settings))
        return starter.start(*command, env, cwd, log)
    except OSError:
        return None


def _runtime_command(argv: list[str]) -> tuple[list[str], object] | None:
    """``python -m kinetic_runtime ...`` and the mount plan it runs under (None: none), when
    ``argv`` is that command, bare or behind ``kinetic_testing.enter_mounts``."""
    mounts = None
    if argv[:3] == [sys.executable, "-m", _ENTER_MOUNTS] and argv[4:5] == ["--"]:
        mounts, argv = json.loads(argv[3]), argv[5:]
    return (argv, mounts) if argv[:3] == [sys.executable, "-m", _MODULE] else None


@atexit.register
def _close_all() -> None:
    with _lock:
        for starter in _starters.values():
            starter.close()
        _starters.clear()
