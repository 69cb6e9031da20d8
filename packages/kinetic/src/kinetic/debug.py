"""Attach a debugger to a ``debug=True`` job: :meth:`kinetic.JobHandle.debug_attach`.

The job's runtime starts a debugpy server and records where it listens in ``debug.json``
(:class:`~kinetic_protocol.DebugState`, phase ``waiting`` until a debugger attaches). Here the
client waits for that record, makes the server reachable on a local port, and prints the VS Code
``launch.json`` "attach" configuration for it.

* A backend that declares ``Capabilities.debug_port_forward`` (``gke``) runs the job somewhere
  this machine cannot reach directly. It names the forwarding command through its
  ``port_forward_command(record, local_port, remote_port) -> list[str]`` method (``kubectl
  port-forward pod/... --context ...``), which is started here as a subprocess. A subprocess,
  not the Kubernetes client's streaming port-forward, because the API promises a
  :class:`subprocess.Popen` the caller manages (``terminate()`` it after ``result()``), it
  keeps forwarding while the caller's own thread waits on anything else, and it needs no
  listening socket or relay thread of our own.
* Any other backend runs the job where this machine reaches its server directly (``local``
  listens on ``127.0.0.1``, on any free port). The port the user asked for (the one their
  ``launch.json`` names) is still honoured: a relay thread of our own (:mod:`kinetic._relay`)
  listens there and passes the bytes to the server's port; none is needed when the server
  already listens on that port. A :class:`DirectConnection` with the same ``Popen``
  interface is returned, so a caller treats both the same way; ending it ends the relay.

:func:`cleanup_port_forward` ends either.
"""

import collections
import contextlib
import errno
import json
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

from kinetic import _log
from kinetic._context import backend_for, store_for
from kinetic._waiting import Backoff, Deadline
from kinetic_protocol import (
    BackendError,
    ConfigError,
    DebugState,
    JobFailedError,
    JobRecord,
    JobState,
    JobStatus,
    ObjectNotFoundError,
    layout,
)
from kinetic_protocol.optional import PortForwarding
from kinetic_protocol.records import decode_json

if TYPE_CHECKING:
    from kinetic._relay import PortRelay

__all__ = [
    "DEFAULT_ATTACH_TIMEOUT",
    "PORT_FORWARD_READY_TIMEOUT",
    "DebugProcess",
    "DirectConnection",
    "cleanup_port_forward",
    "debug_attach",
    "launch_config",
    "read_debug_state",
    "start_port_forward",
    "wait_for_debug_server",
    "waiting_detail",
]

log = _log.get_logger(__name__)

DEFAULT_ATTACH_TIMEOUT = 15 * 60.0
"""How long ``debug_attach`` waits for the job's debug server: a GKE node pool may have to
scale up first, which takes minutes."""
PORT_FORWARD_READY_TIMEOUT = 30.0
"""How long the forwarding command has to say it listens (``Forwarding from ...``)."""
READY_MARKER = "Forwarding from"
"""The line ``kubectl port-forward`` prints once the local port listens."""
ATTACHABLE_PHASES = ("waiting", "attached")


class DebugProcess(Protocol):
    """What ``debug_attach`` returns: a :class:`subprocess.Popen` or a :class:`DirectConnection`."""

    @property
    def pid(self) -> int: ...
    @property
    def returncode(self) -> int | Any: ...
    def poll(self) -> int | None: ...
    def wait(self, timeout: float | None = None) -> int: ...
    def terminate(self) -> None: ...
    def kill(self) -> None: ...


class DirectConnection:
    """The ``Popen``-shaped result of attaching where no forwarding command is needed.

    There is no process: it is "open" until :meth:`terminate` or :meth:`kill` closes it (and
    with it the relay from the chosen local port, if there is one), which never signals the
    job. ``pid`` is the job's debug server process as the job recorded it (for information
    only); ``host``/``port`` are where a debugger connects.
    """

    def __init__(self, state: DebugState, relay: "PortRelay | None" = None) -> None:
        self.host = "127.0.0.1" if relay is not None else _connect_host(state.host)
        self.port = relay.port if relay is not None else state.port
        self.pid = state.pid
        self.args = ["connect", f"{self.host}:{self.port}"]
        self.returncode: int | None = None
        self._closed = threading.Event()
        self._relay = relay

    def __repr__(self) -> str:
        return f"DirectConnection({self.host}:{self.port}, returncode={self.returncode})"

    def poll(self) -> int | None:
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if not self._closed.wait(timeout):
            raise subprocess.TimeoutExpired(self.args, timeout or 0.0)
        assert self.returncode is not None
        return self.returncode

    def _close(self, code: int) -> None:
        if self.returncode is None:
            self.returncode = code
        if self._relay is not None:
            self._relay.close()
        self._closed.set()

    def terminate(self) -> None:
        self._close(-signal.SIGTERM)

    def kill(self) -> None:
        self._close(-signal.SIGKILL)

    def send_signal(self, sig: int) -> None:
        self._close(-sig)


# -- the job's debug.json ------------------------------------------------------------------------


def read_debug_state(record: JobRecord) -> DebugState | None:
    """The job's ``debug.json``, or ``None`` while it has written none."""
    key = layout.debug_key(record.job_id)
    try:
        data = store_for(record).read(key)
    except ObjectNotFoundError:
        return None
    return decode_json(data, DebugState, what=f"{record.store_uri}/{key}")


def waiting_detail(record: JobRecord, state: JobState) -> JobState:
    """``state`` with the detail "waiting for debugger at HOST:PORT" when a running debug job
    waits for one; ``state`` itself otherwise (and without a read unless it is a debug job)."""
    if not record.debug or state.status is not JobStatus.RUNNING:
        return state
    try:
        debug = read_debug_state(record)
    except Exception:  # the status must not fail because the debug record cannot be read
        log.debug("debug.json unreadable", job_id=record.job_id, exc_info=True)
        return state
    if debug is None or debug.phase != "waiting":
        return state
    detail = f"waiting for debugger at {debug.host}:{debug.port}"
    return JobState(status=state.status, detail=detail, exit_code=state.exit_code)


def _refuse_non_debug(record: JobRecord) -> None:
    if not record.debug:
        raise ConfigError(
            f"Job {record.job_id} was not submitted with debug=True, so it runs no debug "
            "server. Submit it with @kinetic.run(..., debug=True) to attach a debugger."
        )


def wait_for_debug_server(
    record: JobRecord, *, timeout: float | None = DEFAULT_ATTACH_TIMEOUT
) -> DebugState:
    """Block until the job's debug server accepts a debugger (``debug.json`` phase ``waiting``
    or ``attached``); a job that ends first, or stopped waiting, is a ``JobFailedError``."""
    _refuse_non_debug(record)
    backend = backend_for(record)
    deadline = Deadline(timeout)
    backoff = Backoff(*backend.poll_bounds)
    while True:
        state = backend.statuses([record])[record.job_id]
        if state.status.is_terminal:
            raise JobFailedError(
                f"Job {record.job_id} ended {state.describe()} before a debugger could "
                f"attach. Read its logs: kinetic jobs logs {record.job_id}"
            )
        debug = read_debug_state(record)
        if debug is not None and debug.phase in ATTACHABLE_PHASES:
            return debug
        if debug is not None:  # "no-debugger": the wait timed out, the function runs alone
            raise JobFailedError(
                f"Job {record.job_id} stopped waiting for a debugger and runs without one "
                f"(debug.json phase {debug.phase!r}). Submit it again and attach sooner."
            )
        if deadline.expired:
            raise TimeoutError(
                f"Job {record.job_id} is {state.describe()} and its debug server has not "
                f"started after {timeout:g}s; it keeps running. Call debug_attach() again."
            )
        backoff.sleep(deadline)


# -- VS Code ---------------------------------------------------------------------------------------


def launch_config(
    job_id: str, port: int, local_root: str, remote_root: str, *, host: str = "127.0.0.1"
) -> dict[str, Any]:
    """The VS Code ``launch.json`` "attach" configuration for the job's debug server."""
    return {
        "name": f"Kinetic: {job_id}",
        "type": "debugpy",
        "request": "attach",
        "connect": {"host": host, "port": port},
        "pathMappings": [{"localRoot": local_root, "remoteRoot": remote_root}],
        "justMyCode": False,
    }


def _default_local_root() -> str:
    from kinetic.packaging.bundle import find_project_root

    return str(find_project_root(Path.cwd()))


def _print_launch_config(config: dict[str, Any]) -> None:
    snippet = json.dumps(config, indent=2)
    sys.stdout.write(
        f"Debugger ready for job {config['name'].removeprefix('Kinetic: ')}. Add this to the "
        f'"configurations" of .vscode/launch.json and start it:\n{snippet}\n'
    )
    sys.stdout.flush()


# -- forwarding --------------------------------------------------------------------------------


def start_port_forward(
    command: list[str], *, ready_timeout: float = PORT_FORWARD_READY_TIMEOUT
) -> "subprocess.Popen[str]":
    """Start ``command`` and return once it says it listens (a ``Forwarding from`` line).

    Its output is read by a daemon thread for as long as it runs (so it never blocks on a full
    pipe); an exit before it is ready is a ``BackendError`` with what it printed.
    """
    try:
        proc = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            bufsize=1,
        )
    except FileNotFoundError as exc:
        raise ConfigError(
            f"Cannot start {command[0]!r} to forward the debug port: it is not on PATH. "
            "Install it (for kubectl: `gcloud components install kubectl`)."
        ) from exc
    ready, forwarding = threading.Event(), threading.Event()
    output: collections.deque[str] = collections.deque(maxlen=50)

    def drain() -> None:
        assert proc.stdout is not None
        with proc.stdout:
            for line in proc.stdout:
                output.append(line.rstrip())
                if line.startswith(READY_MARKER):
                    forwarding.set()
                    ready.set()
        ready.set()  # output ended: the process is exiting

    threading.Thread(target=drain, daemon=True, name="kinetic-port-forward").start()
    if not ready.wait(ready_timeout):
        cleanup_port_forward(proc)
        raise BackendError(
            f"`{' '.join(command)}` did not start forwarding within {ready_timeout:g}s. "
            f"Its output: {' | '.join(output) or '(none)'}"
        )
    if not forwarding.is_set() or proc.poll() is not None:
        try:
            proc.wait(timeout=5.0)
        except subprocess.TimeoutExpired:  # closed its output but lives on
            cleanup_port_forward(proc)
        raise BackendError(
            f"`{' '.join(command)}` exited with code {proc.returncode} before forwarding: "
            f"{' | '.join(output) or '(no output)'}"
        )
    return proc


class _Job(Protocol):
    """What :func:`debug_attach` attaches to (a :class:`~kinetic.JobHandle` is one)."""

    @property
    def record(self) -> JobRecord: ...


def debug_attach(
    handle: _Job,
    local_port: int = 5678,
    working_dir: str | None = None,
    *,
    timeout: float | None = DEFAULT_ATTACH_TIMEOUT,
    port_taken: Literal["error", "direct"] = "error",
) -> DebugProcess:
    """Wait for the job's debug server, make it reachable on ``local_port`` of this machine,
    print the VS Code configuration, and return the forwarding process (a
    :class:`DirectConnection` where no command forwards). End it with
    :func:`cleanup_port_forward`.

    ``port_taken``: where the job's server is reachable directly and ``local_port`` is taken,
    ``"error"`` refuses with a ConfigError; ``"direct"`` (a blocking call, whose user named no
    port) prints the server's own address instead.
    """
    record = handle.record
    _refuse_non_debug(record)
    _check_port(local_port)
    debug = wait_for_debug_server(record, timeout=timeout)
    backend = backend_for(record)
    proc: DebugProcess
    if backend.capabilities.debug_port_forward:
        if not isinstance(backend, PortForwarding):
            raise ConfigError(
                f"Backend {record.backend!r} declares debug_port_forward but has no "
                "port_forward_command(record, local_port, remote_port) method."
            )
        command = backend.port_forward_command(record, local_port, debug.port)
        log.debug("starting port-forward", job_id=record.job_id, command=command)
        proc = start_port_forward(command)
        host, port = "127.0.0.1", local_port
    else:
        proc = DirectConnection(debug, _relay_to(debug, local_port, port_taken=port_taken))
        host, port = proc.host, proc.port
    local_root = working_dir if working_dir is not None else _default_local_root()
    config = launch_config(record.job_id, port, local_root, debug.workdir, host=host)
    _print_launch_config(config)
    return proc


def _check_port(local_port: object) -> None:
    """Refuse a value that is no TCP port before waiting (minutes, maybe) for the server."""
    if isinstance(local_port, bool) or not isinstance(local_port, int):
        raise TypeError(
            f"local_port must be an int (a TCP port, 1-65535); got "
            f"{type(local_port).__name__} {local_port!r}."
        )
    if not 1 <= local_port <= 65535:
        raise ConfigError(f"local_port must be a TCP port, 1-65535; got {local_port}.")


def _relay_to(
    debug: DebugState, local_port: int, *, port_taken: Literal["error", "direct"]
) -> "PortRelay | None":
    """A relay from ``local_port`` (what the user's ``launch.json`` names) to the job's debug
    server; none when the server already listens on that port of this machine, or when the
    port is taken and ``port_taken`` is ``"direct"``."""
    from kinetic._relay import PortRelay

    host = _connect_host(debug.host)
    if local_port == debug.port and host in ("127.0.0.1", "localhost"):
        return None
    try:
        return PortRelay(local_port, (host, debug.port))
    except OSError as exc:
        if port_taken == "direct" and exc.errno == errno.EADDRINUSE:
            sys.stdout.write(
                f"Local port {local_port} is in use on this machine; attach to the job's own "
                f"debug server at {host}:{debug.port} instead (the entry below names it).\n"
            )
            return None
        raise ConfigError(_unusable_port(local_port, exc, f"{host}:{debug.port}")) from exc


def _unusable_port(local_port: int, exc: OSError, server: str) -> str:
    """Why ``local_port`` cannot be listened on, and what to do instead."""
    if exc.errno == errno.EADDRINUSE:
        why = (
            f"Local port {local_port} is already in use on this machine (another debugger "
            f"session, or another program, listens there)"
        )
    elif exc.errno == errno.EACCES:
        why = f"Local port {local_port} needs privileges this process lacks (ports below 1024)"
    else:
        why = f"Cannot listen on local port {local_port} ({exc.strerror or exc})"
    return (
        f"{why}. Stop what uses it, or pass another local_port (kinetic jobs debug --port N) "
        f"and name that port in launch.json's \"connect\"; the job's debug server itself "
        f"listens at {server}."
    )


def _connect_host(listening: str) -> str:
    """Where to connect to a server listening on ``listening`` (a wildcard: this machine)."""
    return "127.0.0.1" if listening in ("", "0.0.0.0", "::") else listening  # noqa: S104


def cleanup_port_forward(proc: DebugProcess | None, *, grace: float = 5.0) -> None:
    """End a process ``debug_attach`` returned: terminate, wait ``grace`` seconds, then kill.

    Safe to call again, or on a process that already ended.
    """
    if proc is None:
        return
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            proc.terminate()
        try:
            proc.wait(timeout=grace)
            return
        except subprocess.TimeoutExpired:
            log.debug("port-forward ignored SIGTERM; killing it", pid=proc.pid)
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
    proc.wait()
