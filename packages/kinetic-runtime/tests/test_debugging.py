"""The debug server of a ``debug=True`` job: what it records, in which order, and what it
does with no debugger or no debugpy. A fake debugpy stands in for the real one, except in the
process tests at the end."""

import socket
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import msgspec
import pytest
from runtime_jobs import JobStage, pickled_call

from kinetic_protocol import DebugOptions, DebugState, Failed, Succeeded, layout
from kinetic_runtime import debugging
from kinetic_runtime.stores import LocalStore


class _WaitForClient:
    """``debugpy.wait_for_client``: blocks until a client attached or ``cancel()``."""

    def __init__(self) -> None:
        self.done = threading.Event()
        self.cancelled = False

    def __call__(self) -> None:
        self.done.wait()

    def cancel(self) -> None:
        self.cancelled = True
        self.done.set()


class FakeDebugpy(ModuleType):
    """debugpy's calls as the runtime uses them. With ``attaches``, a client attaches as soon
    as ``debug.json`` says "waiting" (the runtime asks only after writing it)."""

    def __init__(self, store: LocalStore, job_id: str, *, attaches: bool) -> None:
        super().__init__("debugpy")
        self.store, self.job_id, self.attaches = store, job_id, attaches
        self.listened: tuple[str, int] | None = None
        self.wait_for_client = _WaitForClient()

    def listen(self, address: tuple[str, int]) -> tuple[str, int]:
        self.listened = address
        return address[0], address[1] or 40123

    def is_client_connected(self) -> bool:
        state = _state(self.store, self.job_id)
        if self.attaches and state is not None and state.phase == "waiting":
            self.wait_for_client.done.set()
        return self.attaches and self.wait_for_client.done.is_set()

    def breakpoint(self) -> None:
        pass


def _state(store: LocalStore, job_id: str) -> DebugState | None:
    key = layout.debug_key(job_id)
    return msgspec.json.decode(store.read(key), type=DebugState) if store.exists(key) else None


@pytest.fixture(autouse=True)
def restore_breakpointhook() -> Iterator[None]:
    hook = sys.breakpointhook
    yield
    sys.breakpointhook = hook


def _serve(
    tmp_path: Path, fake: FakeDebugpy, options: DebugOptions, said: list[str]
) -> tuple[Any, list[str]]:
    phases: list[str] = []
    store = fake.store
    write = store.write

    def recording_write(key: str, data: bytes, *, if_absent: bool = False) -> None:
        write(key, data, if_absent=if_absent)
        if key == layout.debug_key(fake.job_id):
            phases.append(msgspec.json.decode(data, type=DebugState).phase)

    store.write = recording_write  # type: ignore[method-assign]
    stop = debugging.serve(options, store, fake.job_id, tmp_path, said.append, debugpy=fake)
    return stop, phases


def test_an_attached_debugger_is_recorded_after_waiting_and_breakpoint_goes_to_it(
    tmp_path: Path,
) -> None:
    store = LocalStore(tmp_path / "store")
    fake = FakeDebugpy(store, "job-dbg", attaches=True)
    said: list[str] = []
    options = DebugOptions(host="127.0.0.1", port=0, wait_timeout=30)
    stop, phases = _serve(tmp_path, fake, options, said)

    assert phases == ["waiting", "attached"]
    assert stop == fake.breakpoint
    assert sys.breakpointhook == fake.breakpoint
    assert fake.listened == ("127.0.0.1", 0)
    state = _state(store, "job-dbg")
    assert state is not None
    assert (state.host, state.port, state.workdir) == ("127.0.0.1", 40123, str(tmp_path))
    assert any("listening on 127.0.0.1:40123" in line for line in said), said


def test_with_no_debugger_by_the_deadline_the_job_goes_on_and_says_so(tmp_path: Path) -> None:
    store = LocalStore(tmp_path / "store")
    fake = FakeDebugpy(store, "job-alone", attaches=False)
    said: list[str] = []
    stop, phases = _serve(tmp_path, fake, DebugOptions(port=0, wait_timeout=0.2), said)

    assert stop is None
    assert phases == ["waiting", "no-debugger"]
    assert fake.wait_for_client.cancelled
    assert sys.breakpointhook == fake.breakpoint  # a later client still gets breakpoint()
    assert said[-1] == "job job-alone: no debugger attached within 0.2s; running without one"


def test_without_debugpy_or_uv_the_error_says_to_add_debugpy(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "debugpy", None)  # import debugpy raises ImportError
    monkeypatch.setenv("PATH", "")
    with pytest.raises(RuntimeError, match="Add debugpy to the image"):
        debugging.import_debugpy()


def test_a_real_debug_job_with_no_debugger_runs_and_records_it(jobs: JobStage) -> None:
    options = DebugOptions(host="127.0.0.1", port=0, wait_timeout=0)
    run = jobs.run(jobs.stage("job-real", pickled_call(pow, 2, 5), debug=options))
    assert isinstance(run.envelope, Succeeded), run.output
    assert run.exit_code == 0
    assert "no debugger attached within 0s; running without one" in run.output
    state = _state(jobs.store, "job-real")
    assert state is not None and state.phase == "no-debugger" and state.port > 0


def test_a_debug_server_that_cannot_start_fails_the_job_in_phase_debug(jobs: JobStage) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        options = DebugOptions(host="127.0.0.1", port=taken.getsockname()[1], wait_timeout=0)
        run = jobs.run(jobs.stage("job-port", pickled_call(pow, 2, 5), debug=options))
    assert run.exit_code == 2, run.output
    assert isinstance(run.envelope, Failed), run.output
    assert run.envelope.phase == "debug"


def _slice_host(index: int) -> dict[str, str]:
    """Host ``index`` of a 2-host job that leaves JAX alone (one host runs at a time here)."""
    return {
        "KINETIC_NUM_HOSTS": "2",
        "KINETIC_HOST_INDEX": str(index),
        "KINETIC_COORDINATOR_ADDRESS": "127.0.0.1:1",
        "KINETIC_HOST_INSTANCE": "pod-a",
        "KINETIC_JAX_DISTRIBUTED": "off",
    }


def test_only_the_leader_of_a_multi_host_debug_job_serves_a_debugger(jobs: JobStage) -> None:
    """Host 1 starts no server and writes no ``debug.json`` (it would wait the whole
    ``KINETIC_DEBUG_WAIT`` for a client that attaches to host 0); the leader serves one."""
    options = DebugOptions(host="127.0.0.1", port=0, wait_timeout=0)
    job_id = jobs.stage("job-slice", pickled_call(pow, 2, 5), debug=options)

    worker = jobs.run(job_id, env=_slice_host(1))
    assert worker.exit_code == 0, worker.output
    assert "the debugger attaches to host 0; host 1 of 2 runs without one" in worker.output
    assert "debugger listening" not in worker.output
    assert _state(jobs.store, job_id) is None

    leader = jobs.run(job_id, env=_slice_host(0))
    assert isinstance(leader.envelope, Succeeded), leader.output
    state = _state(jobs.store, job_id)
    assert state is not None and state.phase == "no-debugger"
