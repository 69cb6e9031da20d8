"""``kinetic jobs ...`` against real jobs on the local backend."""

import json
import re
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

import pytest

import kinetic
from kinetic import JobStatus

pytestmark = pytest.mark.usefixtures("kinetic_env")


@pytest.fixture(scope="module")
def done(funcs: ModuleType) -> SimpleNamespace:
    """Three finished jobs: one succeeded (value 5), one failed, one with a non-JSON value."""
    jobs = SimpleNamespace(
        ok=funcs.add.run_async(2, 3),
        failed=funcs.fail.run_async("bad input"),
        opaque=funcs.opaque.run_async(),
    )
    for job in vars(jobs).values():
        job.wait(timeout=30)
    return jobs


def _json(result: Any) -> Any:
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


def test_list_shows_each_job_with_its_status_as_plain_text(invoke, done) -> None:
    result = invoke("jobs", "list")
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].split() == [
        "JOB",
        "ID",
        "FUNCTION",
        "ACCELERATOR",
        "STATUS",
        "CAUSE",
        "CREATED",
        "BATCH",
    ]
    rows = {line.split()[0]: line for line in lines[1:]}
    assert "SUCCEEDED" in rows[done.ok.job_id]
    assert "FAILED (exit 1)" in rows[done.failed.job_id]
    assert "\x1b[" not in result.stdout  # not a terminal: no ANSI codes


def test_a_job_of_several_nodes_shows_its_shape_in_list_status_and_json(invoke, funcs) -> None:
    job = funcs.host_of_two_nodes.run_async()
    assert job.result(timeout=60, cleanup=False) == "0"
    listed = invoke("jobs", "list")
    [row] = [line for line in listed.stdout.splitlines() if line.startswith(job.job_id)]
    assert "cpu (nodes=2)" in row
    assert "Accelerator: cpu (nodes=2)\n" in invoke("jobs", "status", job.job_id).stdout
    document = _json(invoke("jobs", "status", job.job_id, "--json"))
    assert (document["accelerator"], document["nodes"], document["slices"]) == ("cpu", 2, 1)
    job.cleanup()


def test_list_json_is_one_document_with_status_detail(invoke, done) -> None:
    listed = {job["job_id"]: job for job in _json(invoke("jobs", "list", "--json"))}
    failed = listed[done.failed.job_id]
    assert (failed["status"], failed["status_detail"], failed["exit_code"]) == (
        "FAILED",
        "exit 1",
        1,
    )
    assert listed[done.ok.job_id]["func_name"] == "add"


def test_status_of_a_failed_job_exits_0_and_reports_the_reason(invoke, done) -> None:
    result = invoke("jobs", "status", done.failed.job_id)
    assert result.exit_code == 0
    assert "Status:      FAILED (exit 1)" in result.stdout
    assert "Function:    fail" in result.stdout


def test_status_json_includes_the_status_detail(invoke, done) -> None:
    document = _json(invoke("jobs", "status", done.failed.job_id, "--json"))
    assert document["job_id"] == done.failed.job_id
    assert document["status"] == "FAILED"
    assert document["status_detail"] == "exit 1"
    assert document["exit_code"] == 1
    assert document["description"] == "FAILED (exit 1)"


def test_an_unknown_job_is_exit_1_with_one_error_line(invoke) -> None:
    result = invoke("jobs", "status", "no-such-job")
    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr.startswith("Error: No job 'no-such-job' in file://")
    assert len(result.stderr.strip().splitlines()) == 1
    assert "Traceback" not in result.stderr


def test_debug_adds_the_traceback_to_the_error_line(invoke) -> None:
    result = invoke("--debug", "jobs", "status", "no-such-job")
    assert result.exit_code == 1
    assert "Traceback (most recent call last)" in result.stderr
    assert "JobNotFoundError" in result.stderr
    assert result.stderr.rstrip().splitlines()[-1].startswith("Error: No job 'no-such-job'")


def test_logs_print_the_whole_output_or_its_tail(invoke, done) -> None:
    everything = invoke("jobs", "logs", done.ok.job_id)
    assert everything.exit_code == 0
    assert "adding 2 and 3\ndone adding\n" in everything.stdout
    tail = invoke("jobs", "logs", done.ok.job_id, "--tail", "2")
    assert tail.stdout.splitlines() == everything.stdout.splitlines()[-2:]
    as_json = _json(invoke("jobs", "logs", done.ok.job_id, "--json"))
    assert as_json == {"job_id": done.ok.job_id, "logs": everything.stdout}


def test_logs_of_a_multi_host_job_by_host_and_for_all_hosts(invoke, funcs) -> None:
    job = funcs.greet_from_each_host.run_async()
    assert job.result(cleanup=False) == "0"
    leader = invoke("jobs", "logs", job.job_id)
    assert "hello from host 0\n" in leader.stdout and "host 1" not in leader.stdout
    worker = invoke("jobs", "logs", job.job_id, "--host", "1")
    assert "hello from host 1\n" in worker.stdout and "host 0" not in worker.stdout
    every = invoke("jobs", "logs", job.job_id, "--all-hosts").stdout.splitlines()
    assert "[host 0] hello from host 0" in every and "[host 1] hello from host 1" in every
    assert all(line.startswith(("[host 0] ", "[host 1] ")) for line in every)
    both = invoke("jobs", "logs", job.job_id, "--host", "1", "--all-hosts")
    assert both.exit_code == 2 and "--all-hosts" in both.stderr
    missing = invoke("jobs", "logs", job.job_id, "--host", "2")
    assert missing.exit_code != 0 and "no host 2" in missing.stderr


def test_logs_follow_of_a_finished_job_prints_everything_and_ends(invoke, done) -> None:
    result = invoke("jobs", "logs", done.ok.job_id, "--follow")
    assert result.exit_code == 0
    assert "adding 2 and 3\ndone adding\n" in result.stdout


def test_follow_with_tail_or_json_is_a_usage_error(invoke, done) -> None:
    for extra in (["--tail", "3"], ["--json"]):
        result = invoke("jobs", "logs", done.ok.job_id, "--follow", *extra)
        assert result.exit_code == 2
        assert "--follow" in result.stderr


def test_result_prints_the_value_and_no_cleanup_keeps_the_job(invoke, done) -> None:
    result = invoke("jobs", "result", done.ok.job_id, "--no-cleanup")
    assert (result.exit_code, result.stdout) == (0, "5\n")
    as_json = _json(invoke("jobs", "result", done.ok.job_id, "--no-cleanup", "--json"))
    assert as_json == {"job_id": done.ok.job_id, "value": 5}
    assert done.ok.status() is JobStatus.SUCCEEDED


def test_a_value_json_cannot_hold_prints_as_its_repr(invoke, done) -> None:
    result = invoke("jobs", "result", done.opaque.job_id, "--no-cleanup")
    assert result.stdout == "{1, 2, 3}\n"
    as_json = _json(invoke("jobs", "result", done.opaque.job_id, "--no-cleanup", "--json"))
    assert as_json == {"job_id": done.opaque.job_id, "value": None, "repr": "{1, 2, 3}"}


def test_result_of_a_failed_job_exits_1_with_the_remote_error(invoke, done) -> None:
    result = invoke("jobs", "result", done.failed.job_id)
    assert result.exit_code == 1
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert lines[0] == f"Error: Job {done.failed.job_id} failed: ValueError: bad input"
    assert "Remote traceback (last lines):" in lines
    assert "raise ValueError(message)" in result.stderr  # the user's own frame
    assert f"kinetic jobs logs {done.failed.job_id}" in lines[-1]
    assert done.failed.status() is JobStatus.FAILED  # a failed job is kept for its logs


def test_result_cleans_up_by_default(invoke, funcs) -> None:
    job = funcs.add.run_async(1, 1)
    result = invoke("jobs", "result", job.job_id)
    assert (result.exit_code, result.stdout) == (0, "2\n")
    with pytest.raises(kinetic.JobNotFoundError):
        kinetic.attach(job.job_id)


def test_result_timeout_exits_3_and_leaves_the_job_running(invoke, funcs, tmp_path) -> None:
    gate = tmp_path / "gate"
    job = funcs.gated.run_async(str(gate))
    result = invoke("jobs", "result", job.job_id, "--timeout", "0.2")
    assert result.exit_code == 3
    still = rf"Error: Job {job.job_id} is still (PENDING|RUNNING) after 0.2s"
    assert re.match(still, result.stderr), result.stderr
    # In a shell, the advice names shell commands, not the Python handle's methods.
    for command in ("result", "logs", "cancel"):
        assert f"kinetic jobs {command} {job.job_id}" in result.stderr
    assert "()" not in result.stderr
    assert not job.status().is_terminal
    gate.touch()
    assert job.result(timeout=30) == "opened"


def test_cancel_stops_a_running_job_and_keeps_its_record(
    invoke, funcs, tmp_path, wait_until
) -> None:
    job = funcs.gated.run_async(str(tmp_path / "never"))
    wait_until(lambda: "waiting for the gate" in job.tail(5), "the job to start")
    result = invoke("jobs", "cancel", job.job_id)
    assert result.exit_code == 0, result.stderr
    assert f"Cancelled {job.job_id}" in result.stdout
    assert job.status() is JobStatus.NOT_FOUND
    assert kinetic.attach(job.job_id).job_id == job.job_id  # artifacts are kept


def test_cleanup_removes_the_resource_then_the_artifacts(invoke, funcs) -> None:
    job = funcs.add.run_async(4, 4)
    job.wait(timeout=30)
    assert invoke("jobs", "cleanup", job.job_id, "--no-gcs").exit_code == 0
    assert job.status() is JobStatus.NOT_FOUND
    assert kinetic.attach(job.job_id).job_id == job.job_id
    result = invoke("jobs", "cleanup", job.job_id)
    assert result.exit_code == 0
    assert "stored artifacts" in result.stdout
    with pytest.raises(kinetic.JobNotFoundError):
        kinetic.attach(job.job_id)


def test_cleanup_of_nothing_is_a_usage_error(invoke, done) -> None:
    result = invoke("jobs", "cleanup", done.ok.job_id, "--no-k8s", "--no-gcs")
    assert result.exit_code == 2
    assert done.ok.status() is JobStatus.SUCCEEDED


def test_subprocess_logs_follow_streams_until_the_job_ends(
    funcs, tmp_path: Path, popen_cli
) -> None:
    gate = tmp_path / "gate"
    job = funcs.gated.run_async(str(gate))
    process = popen_cli("jobs", "logs", job.job_id, "--follow")
    assert process.stdout is not None
    seen = []
    for line in process.stdout:  # blocks until the job has printed its first line
        seen.append(line)
        if "waiting for the gate" in line:
            break
    assert process.poll() is None  # still following a job that is still running
    gate.touch()
    rest, stderr = process.communicate(timeout=60)
    assert process.returncode == 0, stderr
    assert "gate opened" in rest
    assert job.status() is JobStatus.SUCCEEDED


def test_outputs_follow_no_link_a_store_writer_planted(
    invoke, kinetic_env: Path, tmp_path: Path
) -> None:
    """A link at ``outputs/<job>/model.bin`` to the victim's key was copied, content and all,
    into the download directory; one in place of a subdirectory was walked into."""
    victim = tmp_path / "home"
    (victim / ".ssh").mkdir(parents=True)
    (victim / ".ssh" / "id_ed25519").write_bytes(b"PRIVATE KEY")
    job_id = "planted-20260101-000000-abcdef0"
    outputs = kinetic_env / "store" / "outputs" / job_id
    (outputs / "real").mkdir(parents=True)
    (outputs / "real" / "metrics.json").write_text("{}")
    (outputs / "model.bin").symlink_to(victim / ".ssh" / "id_ed25519")
    (outputs / "keys").symlink_to(victim / ".ssh", target_is_directory=True)

    target = tmp_path / "downloaded"
    fetched = invoke("jobs", "outputs", job_id, "--download", str(target))
    assert fetched.exit_code == 0, fetched.stderr
    assert sorted(p.relative_to(target).as_posix() for p in target.rglob("*")) == [
        "real",
        "real/metrics.json",
    ]
    for link in ("model.bin", "keys"):
        assert f"Left out {outputs}/{link}: it is a symbolic link" in fetched.stderr
    listed = _json(invoke("jobs", "outputs", job_id, "--json"))
    assert [f["name"] for f in listed["files"]] == ["real/metrics.json"]
    from kinetic.jobs import job_outputs
    from kinetic.outputs import OutputFile

    assert job_outputs(job_id, backend="local").files() == [OutputFile("real/metrics.json", 2)]
