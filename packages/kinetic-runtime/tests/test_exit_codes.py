"""The process contract of ``python -m kinetic_runtime``: its exit status and the envelope.

0 when the function returned, 1 when it raised (phase ``run``), 2 when a phase around the call
failed (the envelope names it) or when not even an envelope could be stored.
"""

import io
import operator
import os
import signal
import subprocess
import sys
import threading
import time
import zipfile
from pathlib import Path

import cloudpickle
from runtime_jobs import JobStage, RuntimeRun, pickled_call

from kinetic_protocol import Failed, Succeeded, layout

EXIT_OK, EXIT_USER_ERROR, EXIT_INFRA_ERROR = 0, 1, 2


def _failed_in(run: RuntimeRun, phase: str, exit_code: int = EXIT_INFRA_ERROR) -> Failed:
    assert run.exit_code == exit_code, run.output
    assert isinstance(run.envelope, Failed), run.output
    assert run.envelope.phase == phase, run.envelope
    return run.envelope


def test_a_returned_value_exits_0_with_a_succeeded_envelope(jobs: JobStage) -> None:
    run = jobs.run(jobs.stage("job-ok", pickled_call(operator.add, 2, 3)))
    assert run.exit_code == EXIT_OK, run.output
    assert isinstance(run.envelope, Succeeded)
    assert run.envelope.job_id == "job-ok"
    assert cloudpickle.loads(run.envelope.value) == 5


def test_a_raised_exception_exits_1_with_phase_run(jobs: JobStage) -> None:
    run = jobs.run(jobs.stage("job-raises", pickled_call(int, "not a number")))
    failed = _failed_in(run, "run", EXIT_USER_ERROR)
    assert failed.exc_type == "builtins.ValueError"
    assert isinstance(cloudpickle.loads(failed.exception or b""), ValueError)
    # The exception line survives even with no frame of user code (``int`` itself raised).
    assert "ValueError: invalid literal" in failed.traceback
    assert "ValueError: invalid literal" in run.output


def test_a_missing_call_descriptor_fails_in_fetch(jobs: JobStage) -> None:
    _failed_in(jobs.run("job-never-staged"), "fetch")


def test_a_bundle_escaping_the_workdir_fails_in_unpack(jobs: JobStage) -> None:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("../escaped.txt", "x")
    staged = jobs.stage("job-unpack", pickled_call(operator.add, 1, 1), bundle=buffer.getvalue())
    _failed_in(jobs.run(staged), "unpack")


def test_an_output_dir_that_cannot_be_made_fails_in_environment(jobs: JobStage) -> None:
    blocker = jobs.tmp_path / "a-file"
    blocker.write_text("not a directory")
    payload = pickled_call(operator.add, 1, 1)
    staged = jobs.stage("job-env", payload, output_dir=str(blocker / "out"))
    _failed_in(jobs.run(staged), "environment")


def test_a_payload_that_is_not_a_pickle_fails_in_deserialize(jobs: JobStage) -> None:
    _failed_in(jobs.run(jobs.stage("job-garbage", b"not a pickle")), "deserialize")


def test_an_unpicklable_return_value_fails_in_serialize_result(jobs: JobStage) -> None:
    failed = _failed_in(
        jobs.run(jobs.stage("job-lock", pickled_call(threading.Lock))), "serialize_result"
    )
    assert "KINETIC_OUTPUT_DIR" in failed.message  # says what to do instead


def test_a_store_that_cannot_be_opened_exits_2_without_an_envelope(jobs: JobStage) -> None:
    staged = jobs.stage("job-no-store", pickled_call(operator.add, 1, 1))
    run = jobs.run(staged, store_uri="bogus://nowhere")
    assert (run.exit_code, run.envelope) == (EXIT_INFRA_ERROR, None), run.output
    assert "cannot open store" in run.output


def test_a_result_that_cannot_be_stored_exits_2(jobs: JobStage) -> None:
    staged = jobs.stage("job-no-result", pickled_call(operator.add, 1, 1))
    (jobs.store.root / layout.result_key(staged)).mkdir(parents=True)  # the key is taken
    run = jobs.run(staged)
    assert run.exit_code == EXIT_INFRA_ERROR, run.output
    assert "could not store the result" in run.output


def test_missing_store_or_job_is_a_usage_error(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KINETIC_")}
    done = subprocess.run(
        [sys.executable, "-m", "kinetic_runtime"],
        capture_output=True,
        text=True,
        check=False,
        env=env,
        cwd=tmp_path,
        timeout=60,
    )
    assert done.returncode == 2
    assert "--store and --job" in done.stderr


PRINT_AND_WAIT = "import time\nprint('partial output', flush=True)\ntime.sleep(120)"


def test_a_run_past_its_attempt_timeout_exits_4_keeping_its_output(jobs: JobStage) -> None:
    """Where the platform cannot stop an attempt at its timeout (pathways), the runtime does."""
    staged = jobs.stage("job-late", pickled_call(exec, PRINT_AND_WAIT))
    run = jobs.run(staged, env={"KINETIC_ATTEMPT_TIMEOUT": "1.5"})
    assert run.exit_code == 4, run.output
    assert run.envelope is None, "nothing is stored for an attempt stopped at its timeout"
    assert "partial output" in run.output
    assert "ran past its timeout of 1.5s" in run.output


def test_a_stopped_run_that_ignores_sigterm_is_ended_as_stopped_after_the_stop_grace(
    jobs: JobStage, tmp_path: Path
) -> None:
    """A pod past its deadline gets SIGTERM, then the kubelet's SIGKILL after the grace period:
    137, which a Job's retry rules read as out of memory. Within ``KINETIC_STOP_GRACE`` the
    keeper ends such a run itself, as stopped by the SIGTERM (143 in a container)."""
    ready = tmp_path / "ready"
    stubborn = (
        "import pathlib, signal, time\n"
        "signal.signal(signal.SIGTERM, lambda *_: print('ignoring SIGTERM', flush=True))\n"
        f"pathlib.Path({str(ready)!r}).touch()\n"
        "time.sleep(60)\n"
    )
    process = jobs.start(
        jobs.stage("job-stubborn", pickled_call(exec, stubborn)), env={"KINETIC_STOP_GRACE": "0.5"}
    )
    try:
        while not ready.exists() and process.poll() is None:
            time.sleep(0.01)  # the function's signal handler is set once the file is there
        process.send_signal(signal.SIGTERM)
        output, _ = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == -signal.SIGTERM, output
    assert "ignoring SIGTERM" in output
    assert "still running 0.5s after SIGTERM; ending it" in output


def test_a_run_within_its_attempt_timeout_is_not_stopped(jobs: JobStage) -> None:
    run = jobs.run(
        jobs.stage("job-in-time", pickled_call(operator.add, 2, 3)),
        env={"KINETIC_ATTEMPT_TIMEOUT": "600"},
    )
    assert run.exit_code == EXIT_OK, run.output


def test_a_workdir_the_runtime_made_itself_is_removed_when_the_job_ends(
    jobs: JobStage, tmp_path: Path
) -> None:
    """Without ``--workdir`` (a pod's command) the runtime works in a temporary directory and
    removes it, and the data directory beside it, when the job ends: a node whose containers
    share ``/tmp`` keeps nothing of the job's code or files."""

    def write_beside_the_code() -> str:  # nested: pickled by value
        Path("scratch.txt").write_text("left by the job")
        return os.getcwd()

    tmp = tmp_path / "tmp"
    tmp.mkdir()
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("helper.py", "VALUE = 1\n")
    job = jobs.stage("job-own-dir", pickled_call(write_beside_the_code), bundle=buffer.getvalue())
    run = jobs.run(job, env={"TMPDIR": str(tmp)}, own_workdir=True)
    assert run.exit_code == EXIT_OK, run.output
    assert isinstance(run.envelope, Succeeded)
    workdir = Path(cloudpickle.loads(run.envelope.value))
    assert workdir.parent == tmp and workdir.name.startswith("kinetic-job-own-dir-")
    assert list(tmp.iterdir()) == []
