"""``debug=True`` on a blocking call (local backend): the call prints where to attach and the
VS Code configuration, a real debugger attaches there and stops in the job, and the call then
returns the function's value, as ``run_async`` + ``debug_attach`` + ``result`` would."""

import json
import signal
from pathlib import Path

import debug_userfuncs as uf
import pytest
from batch_support import start_script
from scenario_support import ScenarioBackend

from kinetic_testing.dap import DapClient

_HANG_GUARD_S = 120
"""Only a guard against a hung script."""


def test_a_blocking_debug_call_says_where_to_attach_waits_for_the_debugger_and_returns(
    local_backend: ScenarioBackend, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A call that never says where to attach ends once the job gives up waiting (then runs
    # without a debugger): the test fails then instead of after the default 600 s.
    monkeypatch.setenv("KINETIC_DEBUG_WAIT", str(_HANG_GUARD_S))
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
    assert f"job {job_id}: debugger listening on {host}:{port}" in out, "the job's output"
    assert out.splitlines()[-1] == "value 60", out
    assert uf.break_line() > 0


def line_after(prefix: str, line: str) -> str:
    """The job id in ``Debugger ready for job JOB_ID. Add this ...``."""
    return line.removeprefix(prefix).split(".", 1)[0]
