"""Submit, observe, collect, cancel and clean up one job, in real processes."""

import re
import warnings
from pathlib import Path

import pytest
import scenario_funcs as uf
from batch_support import start_script
from scenario_support import ScenarioBackend, client_only, pid_gone, wait_until

import kinetic
from kinetic import JobHandle, JobNotFoundError, JobStatus
from kinetic_protocol import layout, parse_accelerator

DNS_1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


def _status_is(job: JobHandle, *wanted: JobStatus) -> bool:
    return job.status() in wanted


def test_calling_the_function_runs_it_remotely_and_returns_the_value(
    kinetic_backend: ScenarioBackend,
) -> None:
    add = kinetic_backend.decorate()(uf.add)
    assert add(2, b=3) == 5


def test_run_async_returns_a_handle_whose_result_is_the_value(
    kinetic_backend: ScenarioBackend,
) -> None:
    job = kinetic_backend.decorate()(uf.add).run_async(40, b=2)
    assert isinstance(job, JobHandle)
    assert DNS_1123_LABEL.match(job.job_id) and len(job.job_id) <= 63
    assert job.job_id.startswith("add-")
    assert job.backend == kinetic_backend.name
    assert job.accelerator == parse_accelerator(kinetic_backend.accelerator).name
    assert job.func_name == "add"
    assert job.result() == 42


def test_status_changes_reach_the_callback_in_order(
    local_backend: ScenarioBackend, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """PENDING, RUNNING and SUCCEEDED each reach ``on_status_change`` exactly once, in order.

    With one local slot taken by a blocker job, the job under test must stay PENDING until the
    callback, on seeing PENDING, releases the blocker; it then stays RUNNING until the callback,
    on seeing RUNNING, opens its own gate. No state can be skipped.
    """
    monkeypatch.setenv("KINETIC_LOCAL_SLOTS", "1")
    hold = local_backend.decorate()(uf.hold)
    release_blocker, release_job = tmp_path / "blocker-gate", tmp_path / "job-gate"
    blocker = hold.run_async(str(release_blocker), "blocker")
    wait_until(lambda: _status_is(blocker, JobStatus.RUNNING), "the blocker to run")
    job = hold.run_async(str(release_job), "done")

    seen: list[JobStatus] = []

    def on_change(status: JobStatus) -> None:
        seen.append(status)
        if status is JobStatus.PENDING:
            release_blocker.touch()
        elif status is JobStatus.RUNNING:
            release_job.touch()

    assert job.result(on_status_change=on_change) == "done"
    assert seen == [JobStatus.PENDING, JobStatus.RUNNING, JobStatus.SUCCEEDED]
    assert blocker.result() == "blocker"


def test_status_callback_sees_running_then_succeeded(
    kinetic_backend: ScenarioBackend, tmp_path: Path
) -> None:
    """Portable form: the job cannot finish before the callback has seen it RUNNING."""
    gate = tmp_path / "gate"
    job = kinetic_backend.decorate()(uf.hold).run_async(str(gate), 7)
    seen: list[JobStatus] = []

    def on_change(status: JobStatus) -> None:
        seen.append(status)
        if status is JobStatus.RUNNING:
            gate.touch()

    assert job.result(on_status_change=on_change) == 7
    assert seen[-2:] == [JobStatus.RUNNING, JobStatus.SUCCEEDED]
    assert seen[0] in {JobStatus.PENDING, JobStatus.RUNNING}
    assert len(seen) == len(set(seen)), f"a status was reported twice in a row: {seen}"


@client_only
def test_a_raising_status_callback_does_not_break_collection_and_is_shown_once(
    kinetic_backend: ScenarioBackend, caplog: pytest.LogCaptureFixture
) -> None:
    def explode(status: JobStatus) -> None:
        raise RuntimeError(f"callback broke on {status}")

    job = kinetic_backend.decorate()(uf.add).run_async(1, b=1)
    assert job.result(on_status_change=explode) == 2
    shown = [r for r in caplog.records if "on_status_change callback raised" in r.getMessage()]
    assert len(shown) == 1
    assert shown[0].exc_info is not None
    assert isinstance(shown[0].exc_info[1], RuntimeError)


def test_logs_and_tail_while_running_and_after(
    kinetic_backend: ScenarioBackend, tmp_path: Path
) -> None:
    gate = tmp_path / "gate"
    lines = [f"line {i}" for i in range(1, 6)]
    job = kinetic_backend.decorate()(uf.print_then_hold).run_async(lines, str(gate))

    # A slice is RUNNING once every host runs: its first host may print before the last starts.
    wait_until(lambda: _status_is(job, JobStatus.RUNNING), "the job to run")
    wait_until(lambda: "line 5" in job.logs(), "all lines in the running job's logs")
    assert job.status() is JobStatus.RUNNING
    assert job.tail(2).splitlines() == ["line 4", "line 5"]
    running_logs = job.logs()
    assert running_logs is not None
    assert all(line in running_logs.splitlines() for line in lines)
    assert "after the gate" not in running_logs

    gate.touch()
    assert job.result(cleanup=False) == 5
    final = job.logs()
    assert final is not None
    assert final.index("line 5") < final.index("after the gate")
    assert "after the gate" in job.tail(5)
    assert len(job.tail(3).splitlines()) == 3


def test_tail_edges_zero_one_and_more_lines_than_the_log(
    kinetic_backend: ScenarioBackend, tmp_path: Path
) -> None:
    """Spec: ``tail(n)`` returns the last ``n`` lines: none for 0, the whole log for more."""
    gate = tmp_path / "gate"
    lines = [f"line {i}" for i in range(1, 4)]
    job = kinetic_backend.decorate()(uf.print_then_hold).run_async(lines, str(gate))

    wait_until(lambda: "line 3" in job.logs(), "all lines in the running job's logs")
    assert job.tail(0) == ""
    assert job.tail(1).splitlines() == ["line 3"]

    gate.touch()
    assert job.result(cleanup=False) == 3
    log = job.logs()
    assert log is not None and "after the gate" in log
    log_lines = log.splitlines()
    assert job.tail(0) == "", "tail(0) must return no lines"
    assert job.tail(1).splitlines() == log_lines[-1:]
    assert job.tail(2).splitlines() == log_lines[-2:]
    assert job.tail(len(log_lines)) == log
    assert job.tail(len(log_lines) + 50) == log
    assert job.tail() == log, "the default (100 lines) covers this short log"
    job.cleanup()


def test_follow_logs_prints_until_the_job_ends(
    kinetic_backend: ScenarioBackend, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``logs(follow=True)`` streams to stdout and returns only once the job is terminal."""
    import threading

    gate = tmp_path / "gate"
    job = kinetic_backend.decorate()(uf.print_then_hold).run_async(["first", "second"], str(gate))

    def open_gate_once_streaming() -> None:
        wait_until(lambda: "second" in (job.logs() or ""), "the job to print")
        gate.touch()

    opener = threading.Thread(target=open_gate_once_streaming)
    opener.start()
    try:
        assert job.logs(follow=True) is None
    finally:
        opener.join()
    assert job.status() is JobStatus.SUCCEEDED
    printed = capsys.readouterr().out
    assert printed.index("first") < printed.index("second") < printed.index("after the gate")
    assert job.result() == 2


@client_only
def test_result_timeout_raises_and_the_job_keeps_running(
    kinetic_backend: ScenarioBackend, tmp_path: Path
) -> None:
    gate = tmp_path / "gate"
    job = kinetic_backend.decorate()(uf.hold).run_async(str(gate), "late")
    with pytest.raises(TimeoutError, match=job.job_id):
        job.result(timeout=0.2)
    assert job.status() in {JobStatus.PENDING, JobStatus.RUNNING}
    wait_until(lambda: _status_is(job, JobStatus.RUNNING), "the job to run")
    gate.touch()
    assert job.result(timeout=30) == "late"


def test_cancel_kills_the_whole_process_tree(
    kinetic_backend: ScenarioBackend, tmp_path: Path
) -> None:
    pid_file = tmp_path / "pids"
    job = kinetic_backend.decorate()(uf.spawn_child_and_hold).run_async(str(pid_file))
    wait_until(pid_file.exists, "the job to publish its pids")
    job_pid, child_pid = map(int, pid_file.read_text().split())
    assert not pid_gone(job_pid) and not pid_gone(child_pid)

    job.cancel(cleanup_timeout=30, cleanup_poll_interval=0.05)

    assert pid_gone(job_pid), "the job's own process survived cancel()"
    assert pid_gone(child_pid), "a process the job started survived cancel()"
    assert job.status() is JobStatus.NOT_FOUND


def test_result_cleans_up_by_default_and_spends_the_handle(
    kinetic_backend: ScenarioBackend,
) -> None:
    """Spec: result() deletes the backend resource and the stored artifacts; the status is then
    NOT_FOUND and the handle is spent, so a second result() has nothing to read."""
    job = kinetic_backend.decorate()(uf.add).run_async(1, b=2)
    assert job.result() == 3
    assert job.status() is JobStatus.NOT_FOUND
    assert kinetic_backend.store().list(layout.job_prefix(job.job_id)) == []
    with pytest.raises(JobNotFoundError, match=job.job_id):
        job.result()
    with pytest.raises(JobNotFoundError):
        kinetic.attach(job.job_id, backend=kinetic_backend.name)


def test_result_without_cleanup_keeps_the_job(kinetic_backend: ScenarioBackend) -> None:
    job = kinetic_backend.decorate()(uf.add).run_async(5, b=5)
    assert job.result(cleanup=False) == 10
    assert job.status() is JobStatus.SUCCEEDED
    store = kinetic_backend.store()
    assert store.exists(layout.job_record_key(job.job_id))
    assert store.exists(layout.result_key(job.job_id))
    assert "succeeded" in job.tail(5)
    assert job.result(cleanup=False) == 10, "the kept result can be read again"


@client_only
def test_result_keeps_a_debug_job(
    kinetic_backend: ScenarioBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Spec: ``result()``'s cleanup defaults to False for debug jobs, from any handle."""
    monkeypatch.setenv("KINETIC_DEBUG_WAIT", "0")  # no debugger comes: run at once
    job = kinetic_backend.decorate(debug=True)(uf.add).run_async(5, b=6)
    assert job.debug
    assert job.result() == 11
    assert job.status() is JobStatus.SUCCEEDED, "result() cleaned up a debug job"
    store = kinetic_backend.store()
    assert store.exists(layout.job_record_key(job.job_id))
    assert store.exists(layout.result_key(job.job_id))

    attached = kinetic.attach(job.job_id, backend=kinetic_backend.name)
    assert attached.debug
    assert attached.result() == 11
    assert job.status() is JobStatus.SUCCEEDED
    assert job.result(cleanup=True) == 11, "an explicit cleanup=True still cleans up"
    assert job.status() is JobStatus.NOT_FOUND
    assert store.list(layout.job_prefix(job.job_id)) == []


@client_only
def test_calling_a_debug_function_keeps_its_job(
    kinetic_backend: ScenarioBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KINETIC_DEBUG_WAIT", "0")  # no debugger comes: run at once
    add = kinetic_backend.decorate(debug=True)(uf.add)
    assert add(1, b=2) == 3
    jobs = kinetic.list_jobs(backend=kinetic_backend.name)
    assert len(jobs) == 1, "calling a debug function cleaned up its job"
    [job] = jobs
    assert (job.func_name, job.debug) == ("add", True)
    assert job.status() is JobStatus.SUCCEEDED
    job.cleanup()


def test_cleanup_of_the_backend_resource_only_keeps_the_result(
    kinetic_backend: ScenarioBackend,
) -> None:
    """Spec (NOT_FOUND): once the resource is gone, result() still returns a stored result."""
    job = kinetic_backend.decorate()(uf.add).run_async(20, b=1)
    job.wait()
    job.cleanup(k8s=True, gcs=False)
    assert job.status() is JobStatus.NOT_FOUND
    assert job.result() == 21
    assert kinetic_backend.store().list(layout.job_prefix(job.job_id)) == []


def test_cleanup_of_everything_makes_result_raise_job_not_found(
    kinetic_backend: ScenarioBackend,
) -> None:
    job = kinetic_backend.decorate()(uf.add).run_async(1)
    job.wait()
    job.cleanup()
    assert job.status() is JobStatus.NOT_FOUND
    with pytest.raises(JobNotFoundError, match=job.job_id):
        job.result()


def test_list_jobs_returns_the_submitted_jobs(
    kinetic_backend: ScenarioBackend, tmp_path: Path
) -> None:
    gate = tmp_path / "gate"
    hold = kinetic_backend.decorate()(uf.hold)
    running = [hold.run_async(str(gate), i) for i in range(2)]
    listed = kinetic.list_jobs(backend=kinetic_backend.name)
    assert {job.job_id for job in listed} == {job.job_id for job in running}
    assert all(job.func_name == "hold" for job in listed)
    gate.touch()
    assert [job.result() for job in running] == [0, 1]
    assert kinetic.list_jobs(backend=kinetic_backend.name) == []


def _in_line(job: JobHandle) -> bool:
    """Whether the job's supervisor waits in line for a slot (its ticket is held), which its
    state says as its place in line."""
    place = job.status_detail().queue
    return place is not None and place.position == 1


def test_one_local_slot_keeps_the_second_job_pending_while_the_first_runs(
    local_backend: ScenarioBackend,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    isolated_kinetic: Path,
) -> None:
    from kinetic_runtime.local import supervisor

    monkeypatch.setenv("KINETIC_LOCAL_SLOTS", "1")
    hold = local_backend.decorate()(uf.hold)
    first_gate, second_gate = tmp_path / "first-gate", tmp_path / "second-gate"
    second_started = tmp_path / "second-started"
    first = hold.run_async(str(first_gate), 1)
    wait_until(lambda: _status_is(first, JobStatus.RUNNING), "the first job to run")
    second = hold.run_async(str(second_gate), 2, str(second_started))
    second_dir = isolated_kinetic / "local" / "jobs" / second.job_id
    # The second job waits in line as a record, with no supervisor (issue 53), or, if the
    # limit is broken, its job starts.
    wait_until(
        lambda: second_started.exists() or _in_line(second),
        "the second job to wait for the slot",
    )
    assert not second_started.exists(), "the second job started while the first held the slot"
    assert not (supervisor.read_state(second_dir) or {}).get("supervisor_pid")
    assert second.status() is JobStatus.PENDING
    assert first.status() is JobStatus.RUNNING
    # Still in line after those reads: the reads start nothing while the slot is taken.
    assert _in_line(second), "the second job left the line while the slot was taken"
    assert not second_started.exists()

    first_gate.touch()
    wait_until(second_started.exists, "the second job to start once the slot is free")
    assert first.status() is JobStatus.SUCCEEDED
    second_gate.touch()
    assert (first.result(), second.result()) == (1, 2)


def test_submitting_a_local_job_leaves_no_unreaped_process_warning(
    local_backend: ScenarioBackend,
) -> None:
    """The detached supervisor's Popen must not warn "subprocess ... is still running"."""
    import gc

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        job = local_backend.decorate()(uf.add).run_async(1)
        gc.collect()
    assert [w for w in caught if issubclass(w.category, ResourceWarning)] == []
    assert job.result() == 1


def test_a_raising_status_callback_is_shown_on_stderr_of_a_script_without_logging(
    local_backend: ScenarioBackend, tmp_path: Path
) -> None:
    """A plain script configures no logging; the callback's error still reaches its stderr,
    once, with its traceback, and the call returns the value."""
    process = start_script(
        tmp_path,
        """
            import kinetic
            import scenario_funcs as uf

            def explode(status):
                raise ZeroDivisionError(f"callback broke on {status.value}")

            add = kinetic.run(accelerator="cpu", backend="local")(uf.add)
            print("value", add.run_async(1, b=1).result(on_status_change=explode))
        """,
    )
    stdout, stderr = process.communicate(timeout=120)
    assert process.returncode == 0, stderr
    assert "value 2" in stdout
    assert stderr.count("on_status_change callback raised") == 1, stderr
    assert stderr.count("Traceback (most recent call last)") == 1, stderr
    assert "ZeroDivisionError: callback broke on" in stderr
