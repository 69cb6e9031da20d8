"""``debug=True`` on the local backend: a debugger attaches to the job, stops in the user's
function and reads a local variable; with none, the job runs without one and says so."""

from pathlib import Path
from typing import Any

import debug_userfuncs as uf
import msgspec
import pytest
from scenario_support import ScenarioBackend, wait_until

from kinetic_protocol import DebugState, ObjectStore, layout
from kinetic_testing.dap import DapClient

_PROJECT_ROOT = Path(__file__).resolve().parents[2]


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


def test_a_debugger_attaches_stops_in_the_function_and_reads_a_local(
    local_backend: ScenarioBackend,
) -> None:
    job = local_backend.decorate(debug=True)(uf.scaled_sum).run_async([1, 2, 3], 10)
    store = local_backend.store()
    waiting = _wait_for_phase(store, job.job_id, "waiting")
    assert waiting.host == "127.0.0.1" and waiting.port > 0
    # The module as the job sees it: unpacked from the bundle into the job's workdir.
    source = Path(waiting.workdir) / Path(uf.__file__).resolve().relative_to(_PROJECT_ROOT)
    assert source.is_file()
    line = uf.break_line()

    with DapClient(waiting.host, waiting.port) as dap:
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
        assert _phase_is(store, job.job_id, "attached")
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
        values = {v["name"]: v["value"] for v in variables["variables"]}
        assert values["total"] == "6"
        assert values["factor"] == "10"
        dap.request("continue", {"threadId": stopped["threadId"]})
        dap.request("disconnect", {"terminateDebuggee": False})

    assert job.result(timeout=60) == 60


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
