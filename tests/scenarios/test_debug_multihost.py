"""``debug=True`` on a 2-host job (``local`` multi-host, ``pathways`` on the real control plane):
the leader alone serves a debugger and waits for it, host 1 runs to its end meanwhile, and a
real debugger attaches to the leader through ``debug_attach`` (``pathways``: through the
backend's port forward, to host 0's pod)."""

import json
import os
import sys
from pathlib import Path

import debug_userfuncs as uf
import msgspec
import pytest
from scenario_support import ScenarioBackend, wait_until

from kinetic.debug import cleanup_port_forward
from kinetic_protocol import DebugState, layout
from kinetic_testing.dap import DapClient
from kinetic_testing.sockets import free_port

SLICE = "tpu-v5litepod-2x4"
_HANG_GUARD_S = 120
"""``KINETIC_DEBUG_WAIT``: only a guard against a job left waiting by a broken test."""
_PROJECT_ROOT = Path(__file__).resolve().parent

_KUBECTL = """\
#!{python}
# kubectl port-forward pod/NAME LOCAL:REMOTE ...: what a kubelet's port forward does, for pods
# whose processes run on this machine (the node agent's). Records its arguments first.
import json, signal, sys
from kinetic._relay import PortRelay

args = sys.argv[1:]
with open({record!r}, "w") as out:
    json.dump(args, out)
local, remote = (int(port) for port in args[2].split(":"))
relay = PortRelay(local, ("127.0.0.1", remote))
print(f"Forwarding from 127.0.0.1:{{local}} -> {{remote}}", flush=True)
signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
try:
    while True:
        signal.pause()
finally:
    relay.close()
"""


def _stand_in_kubectl(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A ``kubectl`` on PATH that forwards as the real one would; where it writes its
    arguments. (The node agent has no kubelet streaming API for the real one to use.)"""
    bin_dir, record = tmp_path / "bin", tmp_path / "kubectl-args.json"
    bin_dir.mkdir()
    kubectl = bin_dir / "kubectl"
    kubectl.write_text(_KUBECTL.format(python=sys.executable, record=str(record)))
    kubectl.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    return record


def _debug_state(backend: ScenarioBackend, job_id: str) -> DebugState | None:
    store, key = backend.store(), layout.debug_key(job_id)
    return msgspec.json.decode(store.read(key), type=DebugState) if store.exists(key) else None


def _waiting(backend: ScenarioBackend, job_id: str) -> DebugState | None:
    state = _debug_state(backend, job_id)
    return state if state is not None and state.phase == "waiting" else None


def _attach_and_continue(port: int) -> None:
    """Attach a debugger, see it stop on the runtime's call of the function, let it run on."""
    with DapClient("127.0.0.1", port) as dap:
        dap.request("initialize", {"adapterID": "kinetic-test", "clientID": "kinetic-test"})
        attach = dap.send("attach", {"justMyCode": False})
        dap.wait_event("initialized")
        dap.request("configurationDone")
        dap.response(attach, "attach")
        stopped = dap.wait_event("stopped")["body"]
        frames = dap.request("stackTrace", {"threadId": stopped["threadId"], "levels": 1})
        assert frames["body"]["stackFrames"][0]["name"] == "call_user_function"
        dap.request("continue", {"threadId": stopped["threadId"]})
        dap.request("disconnect", {"terminateDebuggee": False})


@pytest.mark.backends("local", "pathways")
def test_the_leader_alone_waits_for_the_debugger_and_the_other_host_runs(
    kinetic_backend: ScenarioBackend, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KINETIC_DEBUG_WAIT", str(_HANG_GUARD_S))
    forwarded = None
    if kinetic_backend.name == "pathways":
        forwarded = _stand_in_kubectl(tmp_path, monkeypatch)
    remote = kinetic_backend.decorate(debug=True, accelerator=SLICE)(uf.scaled_sum)
    job = remote.run_async([1, 2, 3], 10)

    def host_1_ended() -> str:
        text = job.logs(host=1) or ""
        return text if "succeeded on host 1 of 2" in text else ""

    host_1 = wait_until(
        host_1_ended,
        "host 1 to run to its end while the leader waits for a debugger",
        timeout=_HANG_GUARD_S / 2,
    )
    assert "the debugger attaches to host 0; host 1 of 2 runs without one" in host_1
    assert "debugger listening" not in host_1
    waiting = wait_until(
        lambda: _waiting(kinetic_backend, job.job_id), "the leader to wait for a debugger"
    )

    local_port = free_port()
    proc = job.debug_attach(local_port=local_port, working_dir=str(_PROJECT_ROOT), timeout=120)
    try:
        _attach_and_continue(local_port)
        assert job.result(timeout=120, cleanup=False) == 60
    finally:
        cleanup_port_forward(proc)
    if forwarded is not None:
        # Every interface of the leader's pod, reached through a forward to host 0's pod.
        assert waiting.host == "0.0.0.0"
        args = json.loads(forwarded.read_text())
        assert args[:3] == ["port-forward", f"pod/{job.k8s_name}-0", f"{local_port}:{waiting.port}"]
