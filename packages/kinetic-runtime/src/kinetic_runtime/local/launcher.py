"""A long-lived process that starts local jobs by forking, with the runtime already imported.

Starting a fresh interpreter and importing the runtime costs ~0.1 s per job, most of a no-op
job's life. The launcher pays that once: asked to dispatch a line
(``kinetic_runtime.local.dispatch``), it forks a detached supervisor (its own session) for each
job it starts, which forks the runtime for the job and, once the job ends, the supervisor of
the next waiting one. It serves one Unix socket per interpreter and code version, and exits
after a short idle period. Any failure to reach it falls back to the line's keeper
(``kinetic_runtime.local.line_keeper``) dispatching. It imports only the runtime, so what every
forked job carries in memory is the runtime, not the client.

    python -m kinetic_runtime.local.launcher SOCKET_PATH
"""

import atexit
import contextlib
import fcntl
import json
import os
import signal
import socket
import sys
import threading
import traceback
from pathlib import Path
from typing import Any, BinaryIO

import kinetic_runtime.data.namespace  # noqa: F401 (a job overlaying its code uses it)
import kinetic_runtime.main as runtime_main  # imported now, so every fork starts warm
from kinetic_runtime.local import supervisor
from kinetic_runtime.local.dispatch import dispatch
from kinetic_runtime.local.processes import die_with_parent
from kinetic_runtime.local.spawners import forked, runtime_start
from kinetic_runtime.private_files import open_private

__all__ = ["IDLE_SECONDS", "fork_runtime", "serve"]

IDLE_SECONDS = 30.0


def fork_runtime(launch: dict[str, Any], job_dir: Path, log: BinaryIO, slot: int) -> int:
    """``StartRuntime`` for the supervisor: the runtime in a fork instead of a new interpreter
    (which inherits ``slot`` with every other descriptor)."""
    parent = os.getpid()
    pid = os.fork()
    if pid:
        return pid
    code = 2
    try:
        die_with_parent(parent)
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.dup2(log.fileno(), 1)
        os.dup2(log.fileno(), 2)
        for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGCHLD):
            signal.signal(signum, signal.SIG_DFL)
        os.environ.clear()
        os.environ.update(supervisor.runtime_env(launch))
        for stream in (sys.stdout, sys.stderr):
            stream.reconfigure(write_through=True)  # type: ignore[union-attr]
        os.chdir(job_dir)
        sys.argv = ["kinetic_runtime"]
        sys.path[0] = str(job_dir)
        workdir = supervisor.workdir(launch, job_dir)
        code = runtime_main.main([*launch["runtime_args"], "--workdir", str(workdir)])
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    except BaseException:
        traceback.print_exc()
    finally:
        # What interpreter shutdown would do, as multiprocessing's forked children do too.
        with contextlib.suppress(BaseException):
            threading._shutdown()  # type: ignore[attr-defined]
            atexit._run_exitfuncs()
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(code)


_SPAWN = forked(runtime_start(fork_runtime))


def _handle(conn: socket.socket) -> None:
    conn.settimeout(5.0)
    with conn, conn.makefile("rb") as reader:
        request = json.loads(reader.readline())
        try:
            dispatch(Path(request["dispatch"]), _SPAWN)
            reply: dict[str, Any] = {"dispatched": True}
        except Exception as exc:
            reply = {"error": repr(exc)}
        conn.sendall(json.dumps(reply).encode() + b"\n")


def serve(socket_path: Path, idle: float = IDLE_SECONDS) -> int:
    lock = open_private(socket_path.with_suffix(".lock"), os.O_RDWR)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return 0  # another launcher serves this socket
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # reap the short-lived middle processes
    staging = socket_path.with_suffix(f".{os.getpid()}.tmp")
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(staging))
    server.listen(128)
    os.replace(staging, socket_path)  # clients never see a socket that does not listen yet
    identity = socket_path.stat().st_ino
    server.settimeout(idle)
    try:
        while True:
            try:
                conn, _ = server.accept()
            except TimeoutError:
                return 0
            try:
                _handle(conn)
            except (OSError, ValueError, KeyError, TypeError) as exc:
                # One client's trouble (killed while it waited for the answer, or a request
                # that is not one) ends its request, not the launcher every later job uses.
                print(f"launcher: a request was not answered: {exc!r}", file=sys.stderr)
    finally:
        with contextlib.suppress(FileNotFoundError):
            if socket_path.stat().st_ino == identity:
                socket_path.unlink()
        server.close()


if __name__ == "__main__":
    sys.exit(serve(Path(sys.argv[1])))
