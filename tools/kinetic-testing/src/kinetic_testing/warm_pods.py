"""``python -m kinetic_testing.warm_pods SOCKET``: the node agent's pod starter, an interpreter
that has imported the GCS client once and forks each pod's ``python -m kinetic_runtime``.

A pod of the gke and pathways tiers reads and writes its job through ``gs://``, and importing
``google.cloud.storage`` took each one about 0.3 s of CPU before its job began: the longest
step between a pod's start and its end. The fork imports nothing of Kinetic's: the runtime,
the job's code and everything they import are loaded in the pod's own process, as in a new
interpreter. What the pod inherits is the GCS client library and its dependencies, loaded by
an interpreter started with the same ``PYTHON*`` settings (see ``nodeagent.warm``).

One request per connection: a JSON line ``{"argv", "env", "cwd", "log"}``; the answer is the
pod process's pid, and, once it has ended, its exit code as ``os.waitstatus_to_exitcode``
gives it (negative for a signal), each on a line of its own. The starter ends when its
standard input (a pipe from the agent's process) closes: it dies with that process.

It runs for every pod, so it sits outside ``kinetic_testing.nodeagent``, whose package imports
the ``kubernetes`` client.
"""

import atexit
import builtins
import contextlib
import json
import os
import runpy
import selectors
import signal
import socket
import sys
import tempfile
import threading
import types
from collections.abc import Mapping
from typing import Any

__all__ = ["COLD", "PRELOADED", "READY", "request", "serve"]

PRELOADED = ("google.cloud.storage",)
"""What a pod inherits already imported: every pod of the tiers imports it for its ``gs://``
store. What it reads of the environment as it is imported is among the settings that choose
a pod's starter (``nodeagent.warm``; a test keeps that list whole)."""

_MODULE_FLAG = "-m"
_OURS = ("kinetic_", "kinetic.")
READY = b"ready\n"
"""What the starter writes on its standard output once it takes requests."""
COLD = os.environ.get("KINETIC_TEST_COLD_PODS", "") not in ("", "0")
"""Read once, as the test plugin imports this module (before any test clears ``KINETIC_*``):
set, every pod is started as a new interpreter."""


def request(
    argv: list[str], env: Mapping[str, str], cwd: str, log: str, mounts: object = None
) -> bytes:
    """A request to start ``argv`` (``python -m MODULE ARGS...``) as a pod's process, in a
    mount namespace of its own first where ``mounts`` is a plan of
    :mod:`kinetic_testing.enter_mounts`."""
    fields = {"argv": argv, "env": dict(env), "cwd": cwd, "log": log, "mounts": mounts}
    return json.dumps(fields).encode() + b"\n"


def serve(socket_path: str) -> int:
    for name in PRELOADED:
        __import__(name)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(socket_path)
    listener.listen(64)
    os.write(sys.stdout.fileno(), READY)
    wake_read, wake_write = os.pipe()
    os.set_blocking(wake_write, False)
    signal.set_wakeup_fd(wake_write)
    signal.signal(signal.SIGCHLD, lambda signum, frame: None)
    children: dict[int, socket.socket] = {}
    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ, "accept")
    selector.register(wake_read, selectors.EVENT_READ, "reap")
    selector.register(sys.stdin, selectors.EVENT_READ, "parent")
    while True:
        for key, _ in selector.select():
            if key.data == "parent":
                return 0  # the agent's process has gone: so do we
            if key.data == "reap":
                os.read(wake_read, 4096)
                _report_ended(children)
                continue
            connection, _ = listener.accept()
            with contextlib.suppress(OSError, ValueError):
                request = json.loads(connection.makefile("rb").readline())
                pid = os.fork()
                if pid == 0:
                    held = [selector, listener, *children.values()]
                    _become_pod(connection, request, held, (wake_read, wake_write))
                children[pid] = connection
        _report_ended(children)


def _become_pod(
    connection: socket.socket, request: dict[str, Any], held: list[Any], fds: tuple[int, int]
) -> None:
    """In the forked child: let go of what the starter holds and run the pod; never returns
    to the starter's loop."""
    try:
        # Its own session before its pid is told: whoever has the pid may signal the group,
        # as after a new process's exec.
        os.setsid()
        connection.sendall(b"%d\n" % os.getpid())
        signal.set_wakeup_fd(-1)
        for thing in (connection, *held):
            thing.close()
        for fd in fds:
            os.close(fd)
    except BaseException:
        os._exit(1)
    _run_pod(request)


def _report_ended(children: dict[int, socket.socket]) -> None:
    while children:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        connection = children.pop(pid, None)
        if connection is None:
            continue
        with contextlib.suppress(OSError):
            connection.sendall(b"%d\n" % os.waitstatus_to_exitcode(status))
        connection.close()


def _run_pod(request: dict[str, Any]) -> None:
    """In the forked child: become the pod's process, as ``exec`` of ``argv`` would make it,
    and run ``python -m MODULE ARGS``."""
    code = 1
    try:
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        log = os.open(request["log"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666)
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.dup2(log, 1)
        os.dup2(log, 2)
        os.close(log)
        os.close(devnull)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        tempfile.tempdir = None  # found again from the pod's TMPDIR
        if request.get("mounts"):
            from kinetic_testing.enter_mounts import enter_plan  # as its exec'ing wrapper does

            enter_plan(request["mounts"])
        argv = request["argv"]
        module, args = argv[2], argv[3:]
        sys.orig_argv = list(argv)
        sys.argv = [_MODULE_FLAG, *args]
        sys.path[0] = os.getcwd()
        for name in [m for m in sys.modules if m.startswith(_OURS)]:
            del sys.modules[name]  # the runtime is imported afresh, as in a new interpreter
        main = sys.modules["__main__"] = types.ModuleType("__main__")
        main.__builtins__ = builtins  # type: ignore[attr-defined]  # as a new __main__ has
        main.__annotations__ = {}
        runpy._run_module_as_main(module)  # type: ignore[attr-defined]  # what -m runs
        code = 0
    except SystemExit as exc:
        code = _exit_code(exc.code)
    except KeyboardInterrupt:
        _finish()
        signal.signal(signal.SIGINT, signal.SIG_DFL)  # as the interpreter ends on one
        os.kill(os.getpid(), signal.SIGINT)
    except BaseException:
        sys.excepthook(*sys.exc_info())
    finally:
        _finish()
        os._exit(code)


def _finish() -> None:
    """What interpreter shutdown does, as multiprocessing's forked children do too."""
    with contextlib.suppress(BaseException):
        threading._shutdown()  # type: ignore[attr-defined]
    with contextlib.suppress(BaseException):
        atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(BaseException):
            stream.flush()


def _exit_code(value: object) -> int:
    """The status ``sys.exit(value)`` ends an interpreter with."""
    if value is None:
        return 0
    if isinstance(value, int):
        return value & 0xFF
    with contextlib.suppress(BaseException):
        print(value, file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(serve(sys.argv[1]))
