"""``debug=True`` on the local backend: a debugger attaches to the job, stops in the user's
function and reads a local variable, directly or through ``debug_attach``'s local port; with
none, the job runs without one and says so."""

import json
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import debug_userfuncs as uf
import msgspec
import pytest
from scenario_support import ScenarioBackend, wait_until

from kinetic import _relay as relay
from kinetic.debug import cleanup_port_forward
from kinetic_protocol import DebugState, ObjectStore, layout
from kinetic_testing.dap import DapClient
from kinetic_testing.sockets import free_port, own_tcp_sockets

_PROJECT_ROOT = Path(__file__).resolve().parent
"""The root of the scenario jobs' code bundle (this directory's ``setup.cfg`` marks it)."""


def _debug_state(store: ObjectStore, job_id: str) -> DebugState | None:
    key = layout.debug_key(job_id)
    if not store.exists(key):
        return None
    return msgspec.json.decode(store.read(key), type=DebugState)


def _phase_is(store: ObjectStore, job_id: str, phase: str) -> DebugState | None:
    state = _debug_state(store, job_id)
    return state if state is not None and state.phase == phase else None


def _wait_for_phase(store: ObjectStore, job_id: str, phase: str) -> DebugState:
    state = wait_until(lambda: _phase_is(store, job_id, phase), f"debug.json to say {phase!r}")
    assert state is not None
    return state


def _top_frame(dap: DapClient, thread_id: int) -> dict[str, Any]:
    frames = dap.request("stackTrace", {"threadId": thread_id, "levels": 1})["body"]
    top: dict[str, Any] = frames["stackFrames"][0]
    return top


def _stop_in_the_function(
    dap: DapClient, source: Path, line: int, *, attached: Callable[[], None]
) -> dict[str, str]:
    """Attach, stop in the runtime, then at ``line`` of the function; the locals there. The
    job runs on to its end afterwards. ``attached`` checks the job's record at the first stop."""
    dap.request("initialize", {"adapterID": "kinetic-test", "clientID": "kinetic-test"})
    attach = dap.send("attach", {"justMyCode": False})
    dap.wait_event("initialized")
    placed = dap.request(
        "setBreakpoints",
        {"source": {"path": str(source)}, "breakpoints": [{"line": line}]},
    )
    assert placed["body"]["breakpoints"][0]["verified"], placed
    dap.request("configurationDone")
    dap.response(attach, "attach")

    # First stop: the runtime, on the line that calls the function.
    stopped = dap.wait_event("stopped")["body"]
    assert _top_frame(dap, stopped["threadId"])["name"] == "call_user_function"
    attached()
    dap.request("continue", {"threadId": stopped["threadId"]})

    # Then the user's breakpoint, inside the function.
    stopped = dap.wait_event("stopped")["body"]
    assert stopped["reason"] == "breakpoint"
    frame = _top_frame(dap, stopped["threadId"])
    assert (frame["name"], frame["line"]) == ("scaled_sum", line)
    assert Path(frame["source"]["path"]).resolve() == source.resolve()
    scopes = dap.request("scopes", {"frameId": frame["id"]})["body"]["scopes"]
    reference = next(s for s in scopes if s["name"] == "Locals")["variablesReference"]
    variables = dap.request("variables", {"variablesReference": reference})["body"]
    dap.request("continue", {"threadId": stopped["threadId"]})
    dap.request("disconnect", {"terminateDebuggee": False})
    return {v["name"]: v["value"] for v in variables["variables"]}


def _source_in_job(waiting: DebugState) -> Path:
    """The module as the job sees it: unpacked from the bundle into the job's workdir."""
    source = Path(waiting.workdir) / Path(uf.__file__).resolve().relative_to(_PROJECT_ROOT)
    assert source.is_file()
    return source


def test_a_debugger_attaches_stops_in_the_function_and_reads_a_local(
    local_backend: ScenarioBackend,
) -> None:
    job = local_backend.decorate(debug=True)(uf.scaled_sum).run_async([1, 2, 3], 10)
    store = local_backend.store()
    waiting = _wait_for_phase(store, job.job_id, "waiting")
    assert waiting.host == "127.0.0.1" and waiting.port > 0

    def attached() -> None:
        assert _phase_is(store, job.job_id, "attached")

    with DapClient(waiting.host, waiting.port) as dap:
        values = _stop_in_the_function(
            dap, _source_in_job(waiting), uf.break_line(), attached=attached
        )
    assert values["total"] == "6"
    assert values["factor"] == "10"
    assert job.result(timeout=60) == 60


def _relay_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == relay.THREAD_NAME]


def test_debug_attach_makes_the_job_reachable_on_the_local_port_it_was_given(
    local_backend: ScenarioBackend, capsys: pytest.CaptureFixture[str]
) -> None:
    """The user's launch.json names a port; the local job's server listens on another one:
    a debugger connecting to the named port debugs the job, and ending the attach leaves no
    relay thread or socket behind."""
    job = local_backend.decorate(debug=True)(uf.scaled_sum).run_async([4, 5], 2)
    local_port = free_port()
    proc = job.debug_attach(local_port=local_port, working_dir=str(_PROJECT_ROOT), timeout=120)
    waiting = _debug_state(local_backend.store(), job.job_id)
    assert waiting is not None and waiting.port != local_port
    try:
        out = capsys.readouterr().out
        config = json.loads(out[out.index("{") :])
        assert config["connect"] == {"host": "127.0.0.1", "port": local_port}
        with DapClient("127.0.0.1", local_port) as dap:
            values = _stop_in_the_function(
                dap, _source_in_job(waiting), uf.break_line(), attached=lambda: None
            )
        assert (values["total"], values["factor"]) == ("9", "2")
        assert job.result(timeout=60) == 18
    finally:
        cleanup_port_forward(proc)
    assert _relay_threads() == []
    relay_sockets = [
        sock
        for sock in own_tcp_sockets()
        if sock.local_port == local_port or sock.remote_port == waiting.port
    ]
    assert relay_sockets == []


def test_with_no_debugger_the_job_runs_without_one_and_says_so(
    local_backend: ScenarioBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KINETIC_DEBUG_WAIT", "0.5")
    job = local_backend.decorate(debug=True)(uf.scaled_sum).run_async([1, 2], 3)
    store = local_backend.store()
    state = _wait_for_phase(store, job.job_id, "no-debugger")
    assert state.port > 0
    assert job.result(timeout=60) == 9
    logs = job.logs() or ""
    assert "no debugger attached within 0.5s; running without one" in logs
