"""Attaching a debugger to real jobs on the local backend: ``JobHandle.debug_attach``,
"waiting for debugger" in the status, and ``kinetic jobs debug``.

The job's ``debug.json`` is written here, as the runtime would write it (the runtime's own
debug server is covered by its end-to-end tests). The jobs are plain gated jobs whose stored
record is marked ``debug=True``, so no real debug server waits in them.
"""

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import msgspec
import pytest

import kinetic
from kinetic import JobHandle, JobStatus
from kinetic._context import store_for
from kinetic.debug import DirectConnection, cleanup_port_forward
from kinetic_protocol import ConfigError, DebugState, JobFailedError, layout
from kinetic_protocol.records import encode_json
from kinetic_testing.signed import seal_job_record

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


def _write_debug(job: JobHandle, phase: str = "waiting") -> None:
    state = DebugState(
        job_id=job.job_id, phase=phase, host="127.0.0.1", port=PORT, pid=1, workdir=WORKDIR
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
        JobStatus.RUNNING, f"waiting for debugger at 127.0.0.1:{PORT}",
    )  # fmt: skip
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
    timer = threading.Timer(0.5, _write_debug, args=(job,))
    timer.start()
    proc = job.debug_attach(local_port=5678, working_dir="/home/me/project", timeout=30)
    timer.join()
    try:
        assert isinstance(proc, DirectConnection)
        assert proc.poll() is None
        assert (proc.host, proc.port) == ("127.0.0.1", PORT)  # direct: nothing is forwarded
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
    result = invoke("jobs", "debug", job.job_id, "--working-dir", "/src", "--timeout", "30")
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
