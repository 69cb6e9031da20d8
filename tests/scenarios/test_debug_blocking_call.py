"""``debug=True`` on a blocking call (local backend): the call prints where to attach and the
VS Code configuration, a real debugger attaches there and stops in the job, and the call then
returns the function's value, as ``run_async`` + ``debug_attach`` + ``result`` would. Where
it offers the debugger: ``KINETIC_DEBUG_PORT`` (default 5678), or the job's own port where
that one is taken."""

import json
import re
import signal
import socket
from pathlib import Path
from typing import NamedTuple

import debug_userfuncs as uf
import pytest
from batch_support import start_script
from scenario_support import ScenarioBackend

from kinetic import ConfigError
from kinetic_testing.dap import DapClient
from kinetic_testing.sockets import free_port

_HANG_GUARD_S = 120
"""Only a guard against a hung script."""


class _Session(NamedTuple):
    job_id: str
    before: str
    """What the call printed up to its launch.json entry."""
    connect: tuple[str, int]
    """Where the entry says to attach."""
    out: str
    """The rest of the call's output, to its end."""


def _debug_blocking_call(tmp_path: Path) -> _Session:
    """Run a blocking debug call in a script, attach a real debugger where it says, let the job
    run to its end and read what the call printed."""
    process = start_script(
        tmp_path,
        """
            import kinetic
            import debug_userfuncs as uf

            scaled_sum = kinetic.run(accelerator="cpu", backend="local", debug=True)(
                uf.scaled_sum
            )
            print("value", scaled_sum([1, 2, 3], 10), flush=True)
            """,
    )
    try:
        assert process.stdout is not None
        before: list[str] = []
        for line in process.stdout:  # up to the launch.json entry the call prints
            before.append(line)
            if line.startswith("Debugger ready for job "):
                break
        else:
            raise AssertionError("".join(before) + process.communicate(timeout=_HANG_GUARD_S)[1])
        snippet = []
        for line in process.stdout:
            snippet.append(line)
            if line == "}\n":
                break
        config = json.loads("".join(snippet))
        assert config["type"] == "debugpy" and config["request"] == "attach", config
        host, port = config["connect"]["host"], config["connect"]["port"]
        job_id = line_after("Debugger ready for job ", before[-1])
        assert f"Job {job_id}: waiting for its debug server" in "".join(before)

        with DapClient(host, port) as dap:  # attach where the call said
            dap.request("initialize", {"adapterID": "kinetic-test", "clientID": "kinetic-test"})
            attach = dap.send("attach", {"justMyCode": False})
            dap.wait_event("initialized")
            dap.request("configurationDone")
            dap.response(attach, "attach")
            stopped = dap.wait_event("stopped")["body"]  # before the function runs
            frames = dap.request("stackTrace", {"threadId": stopped["threadId"], "levels": 1})
            assert frames["body"]["stackFrames"][0]["name"] == "call_user_function"
            dap.request("continue", {"threadId": stopped["threadId"]})
            dap.request("disconnect", {"terminateDebuggee": False})

        out = process.stdout.read()  # the rest, through the same buffer as the lines above
        errors = process.communicate(timeout=_HANG_GUARD_S)[1]
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGKILL)
            process.communicate()
    assert process.returncode == 0, errors
    assert f"Job {job_id} waits for a debugger to attach" in out, out
    assert out.splitlines()[-1] == "value 60", out
    return _Session(job_id, "".join(before), (host, port), out)


def _server_port(session: _Session) -> int:
    """The port the job's debug server listens on, as the job's output says."""
    found = re.search(
        rf"job {session.job_id}: debugger listening on 127\.0\.0\.1:(\d+)", session.out
    )
    assert found, session.out
    return int(found[1])


@pytest.fixture
def no_hang(monkeypatch: pytest.MonkeyPatch) -> None:
    # A call that never says where to attach ends once the job gives up waiting (then runs
    # without a debugger): the test fails then instead of after the default 600 s.
    monkeypatch.setenv("KINETIC_DEBUG_WAIT", str(_HANG_GUARD_S))


@pytest.mark.usefixtures("no_hang")
def test_a_blocking_debug_call_says_where_to_attach_waits_for_the_debugger_and_returns(
    local_backend: ScenarioBackend, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The call offers the debugger on KINETIC_DEBUG_PORT (the port launch.json names), though
    the local job's server listens on a port of its own."""
    port = free_port()
    monkeypatch.setenv("KINETIC_DEBUG_PORT", str(port))
    session = _debug_blocking_call(tmp_path)
    assert session.connect == ("127.0.0.1", port)
    assert _server_port(session) != port
    assert "is in use" not in session.before


@pytest.mark.usefixtures("no_hang")
def test_a_blocking_debug_call_whose_port_is_taken_offers_the_job_s_own(
    local_backend: ScenarioBackend, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A blocking call has no argument to name another port: where it is taken, the call says
    so and offers the job's server itself."""
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        monkeypatch.setenv("KINETIC_DEBUG_PORT", str(port))
        session = _debug_blocking_call(tmp_path)
    server_port = _server_port(session)
    assert session.connect == ("127.0.0.1", server_port)
    assert (
        f"Local port {port} is in use on this machine; attach to the job's own debug server "
        f"at 127.0.0.1:{server_port} instead" in session.before
    )


def test_a_malformed_debug_port_is_refused_before_the_job_is_submitted(
    local_backend: ScenarioBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KINETIC_DEBUG_PORT", "port-5678")
    monkeypatch.setenv("KINETIC_DEBUG_WAIT", "0")  # a job submitted all the same ends at once
    scaled_sum = local_backend.decorate(debug=True)(uf.scaled_sum)
    with pytest.raises(
        ConfigError, match=r"KINETIC_DEBUG_PORT must be a TCP port, 1-65535; got 'port-5678'"
    ):
        scaled_sum([1], 1)
    assert local_backend.store().list("jobs/") == []
    assert local_backend.store().list("bundles/") == []


def line_after(prefix: str, line: str) -> str:
    """The job id in ``Debugger ready for job JOB_ID. Add this ...``."""
    return line.removeprefix(prefix).split(".", 1)[0]
