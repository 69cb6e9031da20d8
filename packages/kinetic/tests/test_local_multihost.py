"""Multi-host on a laptop: the local backend runs each host of a multi-host accelerator as its
own runtime process of one job, fails the job when any host fails, and keeps a log per host."""

import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import kinetic
from kinetic._context import backend_for
from kinetic.handle import JobHandle
from kinetic.local import LocalBackend
from kinetic.local.launcher_client import _socket_path
from kinetic_protocol import (
    ConfigError,
    Failed,
    JobStatus,
    layout,
    parse_accelerator,
    valid_accelerator_names,
)
from kinetic_runtime.local import supervisor
from kinetic_runtime.local.processes import pid_alive
from kinetic_runtime.stores import open_store
from kinetic_testing.signed import open_result

# Jobs import the user code by name from the bundle; the test imports it the same way.
sys.path.insert(0, str(Path(__file__).resolve().parent))

import multihost_userfuncs as uf

TWO_HOSTS = next(n for n in valid_accelerator_names() if parse_accelerator(n).hosts == 2)
DEADLINE_S = 120.0

pytestmark = pytest.mark.usefixtures("clean_kinetic_env")


@pytest.fixture(params=["fresh", "launcher"])
def start_path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """``fresh``: each host is a new interpreter; ``launcher``: each is forked, warm, from a
    launcher that serves this code before the test starts."""
    if request.param == "fresh":
        monkeypatch.setenv("KINETIC_LOCAL_LAUNCHER", "0")
    else:
        kinetic.run(accelerator="cpu", backend="local")(uf.say_lines).run_async(0).result()
        deadline = time.monotonic() + DEADLINE_S
        while not _socket_path().exists():
            assert time.monotonic() < deadline, "no launcher started"
            time.sleep(0.01)
    path: str = request.param
    return path


def _submit(fn: Callable[..., Any], *args: Any) -> JobHandle:
    remote = kinetic.run(accelerator=TWO_HOSTS, backend="local")(fn)
    job: JobHandle = remote.run_async(*args)
    return job


def _finished(job: JobHandle) -> JobStatus:
    status = job.wait().status
    assert isinstance(status, JobStatus)
    return status


def _job_dir(job: JobHandle) -> Path:
    backend: object = backend_for(job.record)
    assert isinstance(backend, LocalBackend)
    return backend.job_dir(job.job_id)


def _state(job: JobHandle) -> dict[str, Any]:
    state = supervisor.read_state(_job_dir(job))
    assert state is not None
    return state


@pytest.mark.usefixtures("start_path")
def test_each_host_runs_the_function_and_the_leaders_value_is_the_result(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("KINETIC_LOCAL_SLOTS", "1")  # a multi-host job is one job: one slot
    job = _submit(uf.host_and_count)
    assert _finished(job) is JobStatus.SUCCEEDED, job.tail(50)
    assert job.result(cleanup=False) == ("0", "2")
    state = _state(job)
    assert len(state["pids"]) == 2
    job_dir = _job_dir(job)
    assert (job_dir / "work").is_dir() and (job_dir / "work-host1").is_dir()
    job.cleanup()


def test_a_worker_that_fails_fails_the_job_and_stores_its_failure() -> None:
    job = _submit(uf.fail_on_host, 1)
    assert _finished(job) is JobStatus.FAILED
    assert "host 1 of 2: exit 1" in job.status_detail().detail
    store = open_store(job.record.store_uri)
    key = layout.host_result_key(job.job_id, 1)
    failed = open_result(job.record, store.read(key), key=key, kind="host-result")
    assert isinstance(failed, Failed)
    assert (failed.host, failed.hosts) == (1, 2)
    assert "host 1 gave up" in failed.message
    job.cleanup()


@pytest.mark.usefixtures("start_path")
def test_the_other_hosts_are_stopped_when_one_fails(tmp_path: Path) -> None:
    job = _submit(uf.hang_unless_failing, 1, str(tmp_path / "host-0-hangs"))
    assert _finished(job) is JobStatus.FAILED
    assert "host 1 of 2: exit 1" in job.status_detail().detail
    pids = _state(job)["pids"]
    assert len(pids) == 2
    _wait_gone(pids)
    assert "host 0 hangs" in backend_for(job.record).logs(job.record, host=0)
    job.cleanup()


def _wait_gone(pids: list[int]) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while any(pid_alive(pid) for pid in pids):
        assert time.monotonic() < deadline, f"hosts {pids} still run"
        time.sleep(0.01)


def test_cancelling_a_multi_host_job_stops_every_host(tmp_path: Path) -> None:
    marker = tmp_path / "a-host-hangs"
    job = _submit(uf.hang_unless_failing, 2, str(marker))  # no host 2: both hang
    deadline = time.monotonic() + DEADLINE_S
    while not (marker.exists() and len(_state(job).get("pids", [])) == 2):
        assert time.monotonic() < deadline, job.tail(50)
        time.sleep(0.01)
    pids = _state(job)["pids"]
    assert all(pid_alive(pid) for pid in pids)
    job.cancel()
    _wait_gone(pids)
    assert job.status() is JobStatus.NOT_FOUND


def test_each_host_has_its_own_log_and_all_interleaves_them_prefixed() -> None:
    job = _submit(uf.say_lines, 3)
    backend = backend_for(job.record)
    followed = list(backend.follow_logs(job.record, host="all"))
    assert _finished(job) is JobStatus.SUCCEEDED
    leader = backend.logs(job.record)
    assert backend.logs(job.record, host=0) == leader
    assert "line 2 from host 0" in leader and "from host 1" not in leader
    worker = backend.logs(job.record, host=1)
    assert "line 2 from host 1" in worker and "from host 0" not in worker
    every = backend.logs(job.record, host="all")
    lines = every.splitlines()
    assert all(line.startswith(("[host 0] ", "[host 1] ")) for line in lines), every
    assert lines.index("[host 0] line 2 from host 0") < lines.index("[host 1] line 0 from host 1")
    assert sorted(followed) == sorted(every.splitlines(keepends=True))
    assert backend.logs(job.record, tail=1, host=1) == worker.splitlines(keepends=True)[-1]
    with pytest.raises(ConfigError, match=rf"{job.job_id} has no host 2: it runs on 2 hosts"):
        backend.logs(job.record, host=2)
    with pytest.raises(ConfigError, match="has no host -1"):
        backend.follow_logs(job.record, host=-1)
    job.cleanup()


def test_a_single_host_job_keeps_one_log_and_one_process() -> None:
    job = kinetic.run(accelerator="cpu", backend="local")(uf.say_lines).run_async(1)
    assert _finished(job) is JobStatus.SUCCEEDED
    backend = backend_for(job.record)
    assert backend.logs(job.record, host="all") == "".join(
        f"[host 0] {line}" for line in backend.logs(job.record).splitlines(keepends=True)
    )
    with pytest.raises(ConfigError, match="has no host 1: it runs on 1 host "):
        backend.logs(job.record, host=1)
    assert len(_state(job)["pids"]) == 1
    job.cleanup()


def test_each_host_gets_its_own_gpus(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two hosts on one CUDA device make NCCL refuse the collective: each gets its own."""
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3,5,7")
    job = _submit(uf.gpu_view)
    assert _finished(job) is JobStatus.SUCCEEDED, job.tail(50)
    assert job.result(cleanup=False) == ("3", None)
    host1 = job.logs(host=1) or ""
    assert "host 1 sees CUDA_VISIBLE_DEVICES='5' JAX_PLATFORMS=None" in host1
    assert "host 1 of 2 uses GPU 5 of this machine's 3" in host1
    assert "1 left unused" in host1
    job.cleanup()


def test_hosts_that_cannot_each_have_a_gpu_run_on_the_cpu_saying_why(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    job = _submit(uf.gpu_view)
    assert _finished(job) is JobStatus.SUCCEEDED, job.tail(50)
    assert job.result(cleanup=False) == ("", "cpu")
    for host in (0, 1):
        log = job.logs(host=host) or ""
        assert "2 hosts but 1 GPU(s) on this machine" in log
        assert f"host {host} sees CUDA_VISIBLE_DEVICES='' JAX_PLATFORMS='cpu'" in log
    job.cleanup()
