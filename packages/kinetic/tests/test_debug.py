"""``kinetic.debug`` without a job: the VS Code snippet, the Popen-shaped direct connection,
starting and ending a forwarding process (real subprocesses), and lazy loading."""

import json
import signal
import subprocess
import sys
import time

import pytest

from kinetic.debug import (
    DirectConnection,
    cleanup_port_forward,
    launch_config,
    start_port_forward,
)
from kinetic_protocol import BackendError, ConfigError, DebugState


def _state(**fields: object) -> DebugState:
    values: dict[str, object] = {"job_id": "job-1", "phase": "waiting", "host": "127.0.0.1"}
    values |= {"port": 40123, "pid": 4242, "workdir": "/w"}
    values.update(fields)
    return DebugState(**values)  # type: ignore[arg-type]


def test_the_launch_config_is_a_vs_code_attach_configuration() -> None:
    assert launch_config("job-1", 5678, "/home/me/proj", "/tmp/kinetic/job-1/src") == {
        "name": "Kinetic: job-1",
        "type": "debugpy",
        "request": "attach",
        "connect": {"host": "127.0.0.1", "port": 5678},
        "pathMappings": [{"localRoot": "/home/me/proj", "remoteRoot": "/tmp/kinetic/job-1/src"}],
        "justMyCode": False,
    }
    json.dumps(launch_config("job-1", 5678, "/a", "/b"))  # JSON as it is printed


def test_a_direct_connection_acts_like_a_running_process_until_ended() -> None:
    conn = DirectConnection(_state(host="0.0.0.0"))
    assert (conn.host, conn.port, conn.pid) == ("127.0.0.1", 40123, 4242)
    assert conn.poll() is None and conn.returncode is None
    with pytest.raises(subprocess.TimeoutExpired):
        conn.wait(timeout=0.01)
    conn.terminate()
    assert conn.poll() == -signal.SIGTERM
    assert conn.wait() == -signal.SIGTERM
    conn.kill()  # already closed: keeps its first code, like a reaped process
    assert conn.returncode == -signal.SIGTERM


def test_cleanup_ends_a_direct_connection_and_can_be_repeated() -> None:
    conn = DirectConnection(_state())
    cleanup_port_forward(conn)
    cleanup_port_forward(conn)
    cleanup_port_forward(None)
    assert conn.returncode == -signal.SIGTERM


def test_cleanup_terminates_a_real_process_and_can_be_repeated() -> None:
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    cleanup_port_forward(proc)
    assert proc.returncode == -signal.SIGTERM
    cleanup_port_forward(proc)
    assert proc.returncode == -signal.SIGTERM


def test_cleanup_kills_a_process_that_ignores_terminate_after_the_grace() -> None:
    code = (
        "import signal, sys, time\n"
        "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        "print('ready', flush=True)\n"
        "time.sleep(60)\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline() == "ready\n"
    started = time.monotonic()
    cleanup_port_forward(proc, grace=0.2)
    assert proc.returncode == -signal.SIGKILL
    assert time.monotonic() - started < 10
    proc.stdout.close()


FAKE_FORWARD = (
    "import sys, time\n"
    "print('Forwarding from 127.0.0.1:5678 -> 5678', flush=True)\n"
    "print('Forwarding from [::1]:5678 -> 5678', flush=True)\n"
    "for _ in range(200): print('Handling connection for 5678', flush=True)\n"
    "time.sleep(60)\n"
)


def test_a_forward_is_returned_once_it_says_it_listens_and_its_output_is_drained() -> None:
    proc = start_port_forward([sys.executable, "-c", FAKE_FORWARD])
    try:
        assert isinstance(proc, subprocess.Popen)
        assert proc.poll() is None
    finally:
        cleanup_port_forward(proc)
    assert proc.returncode == -signal.SIGTERM


def test_a_forward_that_fails_to_start_is_an_error_with_its_output() -> None:
    failing = "import sys; print('error: pods \"p\" not found', file=sys.stderr); sys.exit(1)"
    with pytest.raises(BackendError, match=r'exited with code 1 .*pods "p" not found'):
        start_port_forward([sys.executable, "-c", failing])


def test_a_forward_that_never_gets_ready_is_ended_and_reported() -> None:
    with pytest.raises(BackendError, match=r"did not start forwarding within 0\.3s"):
        start_port_forward([sys.executable, "-c", "import time; time.sleep(60)"], ready_timeout=0.3)


def test_a_missing_forwarding_program_is_a_config_error_saying_how_to_install() -> None:
    with pytest.raises(ConfigError, match="gcloud components install kubectl"):
        start_port_forward(["kinetic-no-such-program-xyz", "port-forward"])


def test_kinetic_debug_loads_lazily() -> None:
    probe = (
        "import sys, kinetic\n"
        "assert 'kinetic.debug' not in sys.modules\n"
        "assert callable(kinetic.debug.cleanup_port_forward)\n"
        "import kinetic.debug as d\n"
        "assert d is kinetic.debug\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
