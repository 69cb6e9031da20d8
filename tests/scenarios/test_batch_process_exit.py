"""What happens to a batch when the submitting script ends: normally (on every scenario
backend), or with Ctrl-C (local backend: it is about the local script's signal handling)."""

import signal
import subprocess
from pathlib import Path

from batch_support import (
    SCENARIOS_DIR,
    four_local_slots,  # noqa: F401 (an autouse fixture)
    start_script,
)
from scenario_support import ScenarioBackend, client_only, run_script, wait_until

import kinetic
from kinetic import JobStatus
from kinetic.batch import SkippedInputError
from kinetic_protocol import layout


@client_only
def test_a_script_that_returns_right_after_run_async_map_still_submits_every_input(
    kinetic_backend: ScenarioBackend, tmp_path: Path
) -> None:
    """The submitter is a non-daemon thread so that the interpreter waits for it at exit; it
    must still be able to submit after the main thread has finished."""
    done = run_script(
        f"""
        import sys
        sys.path.insert(0, {SCENARIOS_DIR!r})
        import kinetic
        import batch_userfuncs as uf

        square = kinetic.run(**{kinetic_backend.options!r})(uf.square)
        batch = square.run_async_map([1, 2, 3], max_concurrent=1)
        print(batch.group_id, flush=True)
        """,
        tmp_path / "early-exit",
    )
    group_id = done.stdout.split()[-1]
    assert "Traceback" not in done.stderr, done.stderr
    attached = kinetic.attach_batch(group_id, backend=kinetic_backend.name)
    assert attached.results(timeout=60) == [1, 4, 9]


_HANG_GUARD_S = 120
"""Only a guard against a hung script: Ctrl-C normally ends it in well under a second."""


def _interrupt(process: "subprocess.Popen[str]") -> str:
    """Ctrl-C the script once and wait for it to end; its stderr.

    Once: the wait stops the batch's submitter itself (it used to be noticed only when the
    interpreter's exit joined that thread, which a user could see take long under load)."""
    process.send_signal(signal.SIGINT)
    return process.communicate(timeout=_HANG_GUARD_S)[1]


def test_ctrl_c_stops_the_submitting_script_and_its_submissions(
    local_backend: ScenarioBackend, tmp_path: Path
) -> None:
    """SIGINT while ``results()`` waits: the script exits (the running job is left alone, as
    for a single job) and no further input is submitted, even once the running job ends."""
    started, gate = tmp_path / "started", tmp_path / "gate"
    process = start_script(
        tmp_path,
        """
            import os
            import sys
            import time
            import kinetic
            import batch_userfuncs as uf

            started, gate = sys.argv[1], sys.argv[2]
            step = kinetic.run(accelerator="cpu", backend="local")(uf.step)
            inputs = [{"value": 0, "create": started, "wait_for": gate}]
            inputs += [{"value": i, "wait_for": gate} for i in range(1, 8)]
            batch = step.run_async_map(inputs, max_concurrent=1)
            deadline = time.monotonic() + 60
            while not os.path.exists(started):
                if time.monotonic() > deadline:
                    sys.exit("the first job never started")
                time.sleep(0.01)
            import threading

            def say_ready_once_waiting():
                # "ready" only once the main thread is inside results(): a SIGINT sent
                # between the print and the call would test nothing of results().
                main = threading.main_thread().ident
                while True:
                    frame, names = sys._current_frames().get(main), set()
                    while frame is not None:
                        names.add(frame.f_code.co_name)
                        frame = frame.f_back
                    if "results" in names:
                        break
                    time.sleep(0.01)
                print("ready", batch.group_id, flush=True)

            threading.Thread(target=say_ready_once_waiting, daemon=True).start()
            batch.results()
            """,
        str(started),
        str(gate),
    )
    try:
        assert process.stdout is not None
        ready = process.stdout.readline().split()
        assert ready[:1] == ["ready"], process.communicate(timeout=30)
        group_id = ready[1]
        errors = _interrupt(process)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert "KeyboardInterrupt" in errors, errors
    # The message says what goes on and how to reattach.
    assert f"Interrupted: batch {group_id} stopped submitting here" in errors, errors
    assert "its 1 submitted job(s) keep running" in errors, errors
    assert f"kinetic.attach_batch({group_id!r}, backend='local')" in errors, errors

    store = local_backend.store()
    children = store.list(layout.children_prefix(group_id))
    assert [layout.parse_child_key(key) for key in children] == [(0, 0)]

    # The running job is not the script's to stop; once it ends, nothing submits input 1.
    first = kinetic.attach_batch(group_id, backend="local").jobs[0]
    assert first is not None and first.status() is JobStatus.RUNNING
    gate.touch()
    wait_until(lambda: first.status() is JobStatus.SUCCEEDED, "input 0 to finish")
    assert store.list(layout.children_prefix(group_id)) == children

    # The interrupted batch can be reattached and collected: it knows submission has ended.
    outcomes = kinetic.attach_batch(group_id, backend="local").results(
        return_exceptions=True, timeout=60
    )
    assert outcomes[0] == 0
    assert all(isinstance(outcome, SkippedInputError) for outcome in outcomes[1:]), outcomes
