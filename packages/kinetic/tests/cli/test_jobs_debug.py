"""Attaching a debugger to real jobs on the local backend: ``JobHandle.debug_attach``,
"waiting for debugger" in the status, and ``kinetic jobs debug``.

The job's ``debug.json`` is written here, as the runtime would write it (the runtime's own
debug server, and a real debugger attaching through the relay, are covered by the end-to-end
tests in tests/scenarios/test_debug_job.py). The jobs are plain gated jobs whose stored record
is marked ``debug=True``, so no real debug server waits in them; where bytes must reach one,
an echo server stands in for it.
"""

import contextlib
import json
import signal
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import msgspec
import pytest

import kinetic
from kinetic import JobHandle, JobStatus
from kinetic import _relay as relay
from kinetic._context import store_for
from kinetic.debug import DirectConnection, cleanup_port_forward
from kinetic_protocol import ConfigError, DebugState, JobFailedError, layout
from kinetic_protocol.records import encode_json
from kinetic_testing.signed import seal_job_record
from kinetic_testing.sockets import TcpSocket, free_port, own_tcp_sockets

pytestmark = pytest.mark.usefixtures("kinetic_env")

PORT = 45678
WORKDIR = "/tmp/kinetic-job/src"


@pytest.fixture
def gate(tmp_path: Path) -> Iterator[Path]:
    """A file whose creation ends the gated job; created at the end in any case."""
    path = tmp_path / "gate"
    yield path
    path.touch()


def _debug_job(funcs: ModuleType, gate: Path) -> JobHandle:
    """A running job whose stored record says ``debug=True``."""
    job = funcs.gated.run_async(str(gate))
    store = store_for(job.record)
    record = msgspec.structs.replace(job.record, debug=True)
    store.write(layout.job_record_key(job.job_id), seal_job_record(record))
    handle = kinetic.attach(job.job_id)
    assert handle.debug
    return handle


def _write_debug(job: JobHandle, phase: str = "waiting", port: int = PORT) -> None:
    state = DebugState(
        job_id=job.job_id, phase=phase, host="127.0.0.1", port=port, pid=1, workdir=WORKDIR
    )  # type: ignore[arg-type]
    store_for(job.record).write(layout.debug_key(job.job_id), encode_json(state))


def _running(job: JobHandle) -> None:
    deadline = time.monotonic() + 30
    while job.status() is not JobStatus.RUNNING:
        assert time.monotonic() < deadline, job.status_detail()
        time.sleep(0.02)


def test_a_debug_job_waiting_for_its_debugger_says_so_in_its_status(funcs, gate) -> None:
    job = _debug_job(funcs, gate)
    _running(job)
    assert job.status_detail().detail == ""
    _write_debug(job, "waiting")
    state = job.status_detail()
    assert (state.status, state.detail) == (
        JobStatus.RUNNING,
        f"waiting for debugger at 127.0.0.1:{PORT}",
    )
    assert state.describe() == f"RUNNING (waiting for debugger at 127.0.0.1:{PORT})"
    _write_debug(job, "attached")
    assert job.status_detail().detail == ""
    # The same job seen through a handle that is not a debug job: no extra read, no detail.
    _write_debug(job, "waiting")
    plain = JobHandle.from_record(msgspec.structs.replace(job.record, debug=False))
    assert plain.status_detail().detail == ""


def test_the_cli_status_shows_waiting_for_debugger(funcs, gate, invoke) -> None:
    job = _debug_job(funcs, gate)
    _running(job)
    _write_debug(job)
    result = invoke("jobs", "status", job.job_id)
    assert result.exit_code == 0, result.stderr
    assert f"RUNNING (waiting for debugger at 127.0.0.1:{PORT})" in result.stdout


def test_debug_attach_refuses_a_job_that_is_not_a_debug_job(funcs, gate) -> None:
    job = funcs.gated.run_async(str(gate))
    with pytest.raises(ConfigError, match="not submitted with debug=True"):
        job.debug_attach()


def test_debug_attach_waits_for_the_debug_server_and_prints_the_launch_config(
    funcs, gate, capsys
) -> None:
    job = _debug_job(funcs, gate)
    _running(job)  # so that the end can show the connection left it running
    timer = threading.Timer(0.5, _write_debug, args=(job,))
    timer.start()
    proc = job.debug_attach(local_port=PORT, working_dir="/home/me/project", timeout=30)
    timer.join()
    try:
        assert isinstance(proc, DirectConnection)
        assert proc.poll() is None
        assert (proc.host, proc.port) == ("127.0.0.1", PORT)  # the server's port: direct
        out = capsys.readouterr().out
        config = json.loads(out[out.index("{") :])
        assert config == {
            "name": f"Kinetic: {job.job_id}",
            "type": "debugpy",
            "request": "attach",
            "connect": {"host": "127.0.0.1", "port": PORT},
            "pathMappings": [{"localRoot": "/home/me/project", "remoteRoot": WORKDIR}],
            "justMyCode": False,
        }
    finally:
        cleanup_port_forward(proc)
        cleanup_port_forward(proc)
    assert proc.poll() is not None
    assert job.status() is JobStatus.RUNNING  # ending the connection leaves the job alone


def _echo_server() -> socket.socket:
    """A stand-in for the job's debug server on a port of its own: echoes what it reads."""
    server = socket.create_server(("127.0.0.1", 0))

    def serve() -> None:
        with contextlib.suppress(OSError):
            while True:  # one connection after another, until the server is closed
                conn, _ = server.accept()
                with conn:
                    while data := conn.recv(1024):
                        conn.sendall(data)

    threading.Thread(target=serve, daemon=True).start()
    return server


def _relay_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == relay.THREAD_NAME]


def _relay_sockets(local_port: int, server_port: int) -> list[TcpSocket]:
    """This process's sockets a relay from ``local_port`` to ``server_port`` would hold: its
    listener and accepted connections (on ``local_port``), its connections to the server."""
    return [
        sock
        for sock in own_tcp_sockets()
        if sock.local_port == local_port or sock.remote_port == server_port
    ]


def _echoed(debugger: socket.socket, message: bytes) -> bytes:
    debugger.sendall(message)
    received = b""
    while len(received) < len(message):
        chunk = debugger.recv(1024)
        assert chunk, f"closed after {received!r}"
        received += chunk
    return received


MESSAGE = b"Content-Length: 2\r\n\r\n{}"


def test_debug_attach_on_local_honours_the_local_port_it_was_given(funcs, gate, capsys) -> None:
    """launch.json names the port passed as local_port; the job's server took another one:
    the port is relayed to the server, and ending the connection ends the relay whole."""
    job = _debug_job(funcs, gate)
    _running(job)  # so that the end can show the relay left it running
    with _echo_server() as server:
        server_port = server.getsockname()[1]
        _write_debug(job, port=server_port)
        local_port = free_port()
        proc = job.debug_attach(local_port=local_port, working_dir="/home/me/project", timeout=30)
        try:
            assert isinstance(proc, DirectConnection)
            assert (proc.host, proc.port) == ("127.0.0.1", local_port)
            out = capsys.readouterr().out
            config = json.loads(out[out.index("{") :])
            assert config["connect"] == {"host": "127.0.0.1", "port": local_port}
            for _ in range(2):  # a debugger may reconnect
                with socket.create_connection(("127.0.0.1", local_port), timeout=30) as debugger:
                    assert _echoed(debugger, MESSAGE) == MESSAGE  # through the server
            assert _relay_threads(), "the relay runs in this process"
            assert _relay_sockets(local_port, server_port), "and listens in it"
        finally:
            cleanup_port_forward(proc)
        assert _relay_threads() == []
        assert _relay_sockets(local_port, server_port) == []
        with pytest.raises(ConnectionRefusedError):  # nothing listens there any more
            socket.create_connection(("127.0.0.1", local_port), timeout=30).close()
    assert job.status() is JobStatus.RUNNING  # ending the relay leaves the job alone


def test_ending_the_relay_ends_a_debugger_connection_still_open(funcs, gate) -> None:
    job = _debug_job(funcs, gate)
    with _echo_server() as server:
        server_port = server.getsockname()[1]
        _write_debug(job, port=server_port)
        local_port = free_port()
        proc = job.debug_attach(local_port=local_port, working_dir="/src", timeout=30)
        with socket.create_connection(("127.0.0.1", local_port), timeout=30) as debugger:
            assert _echoed(debugger, MESSAGE) == MESSAGE
            cleanup_port_forward(proc)
            assert proc.poll() == -signal.SIGTERM
            assert debugger.recv(1024) == b"", "the debugger sees its connection end"
            assert _relay_threads() == []
            assert _relay_sockets(local_port, server_port) == []


def test_a_local_port_already_in_use_is_refused_naming_it(funcs, gate) -> None:
    job = _debug_job(funcs, gate)
    with socket.create_server(("127.0.0.1", 0)) as taken, _echo_server() as server:
        _write_debug(job, port=server.getsockname()[1])
        port = taken.getsockname()[1]
        with pytest.raises(ConfigError) as caught:
            job.debug_attach(local_port=port, working_dir="/src", timeout=30)
    message = str(caught.value)
    assert f"Local port {port} is already in use on this machine" in message
    assert "pass another local_port (kinetic jobs debug --port N)" in message
    assert 'name that port in launch.json\'s "connect"' in message
    assert _relay_threads() == []
    assert not job.status().is_terminal  # the job still waits for a debugger


def test_jobs_debug_with_a_port_in_use_says_so(funcs, gate, invoke) -> None:
    job = _debug_job(funcs, gate)
    with socket.create_server(("127.0.0.1", 0)) as taken, _echo_server() as server:
        _write_debug(job, port=server.getsockname()[1])
        port = taken.getsockname()[1]
        result = invoke("jobs", "debug", job.job_id, "--port", str(port), "--timeout", "30")
    assert result.exit_code != 0
    assert f"Local port {port} is already in use" in result.stderr
    assert "Unexpected" not in result.stderr


@pytest.mark.parametrize(
    ("port", "error", "shown"),
    [(0, ConfigError, "got 0"), (70000, ConfigError, "got 70000"), ("5678", TypeError, "str")],
)
def test_a_local_port_that_is_no_port_is_refused_before_waiting(
    funcs, gate, port: Any, error: type[Exception], shown: str
) -> None:
    job = _debug_job(funcs, gate)  # its server never starts: a wait would end in TimeoutError
    with pytest.raises(error, match="local_port must be") as caught:
        job.debug_attach(local_port=port, timeout=5)
    assert shown in str(caught.value)


def test_debug_attach_gives_up_after_its_timeout_and_the_job_keeps_running(funcs, gate) -> None:
    job = _debug_job(funcs, gate)
    with pytest.raises(TimeoutError, match=r"debug server has not started after 0\.3s"):
        job.debug_attach(timeout=0.3)
    assert not job.status().is_terminal


def test_a_job_that_ends_before_its_debug_server_starts_is_an_error(funcs, gate) -> None:
    job = _debug_job(funcs, gate)
    gate.touch()
    job.wait(timeout=30)
    with pytest.raises(JobFailedError, match=r"ended SUCCEEDED \(exit 0\) before a debugger"):
        job.debug_attach(timeout=30)


def test_a_job_that_stopped_waiting_for_a_debugger_is_an_error(funcs, gate) -> None:
    job = _debug_job(funcs, gate)
    _write_debug(job, "no-debugger")
    with pytest.raises(JobFailedError, match="stopped waiting for a debugger"):
        job.debug_attach(timeout=30)


def test_jobs_debug_prints_the_config_and_waits_until_the_job_ends(funcs, gate, invoke) -> None:
    job = _debug_job(funcs, gate)
    _write_debug(job)
    timer = threading.Timer(1.0, gate.touch)
    timer.start()
    result = invoke(
        "jobs", "debug", job.job_id, "--port", str(PORT), "--working-dir", "/src", "--timeout", "30"
    )
    timer.join()
    assert result.exit_code == 0, result.stderr
    config = json.loads(result.stdout[result.stdout.index("{") :])
    assert config["connect"] == {"host": "127.0.0.1", "port": PORT}
    assert config["pathMappings"] == [{"localRoot": "/src", "remoteRoot": WORKDIR}]
    assert f"Job {job.job_id} ended SUCCEEDED" in result.stderr


def test_jobs_debug_of_a_job_that_is_not_a_debug_job_is_a_config_error(funcs, gate, invoke) -> None:
    job = funcs.gated.run_async(str(gate))
    result = invoke("jobs", "debug", job.job_id)
    assert result.exit_code != 0
    assert "not submitted with debug=True" in result.stderr
