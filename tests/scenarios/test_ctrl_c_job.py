"""Ctrl-C in a script blocked on one job: the script stops, the job keeps running, and the
message says how to reattach (local backend: it is about the local script's signals)."""

import signal
from pathlib import Path

from batch_support import start_script
from scenario_support import ScenarioBackend, wait_until

import kinetic
from kinetic import JobStatus

_READY = "<<script ready>>"
"""What the script prints once the job runs and its output is being copied."""
_HANG_GUARD_S = 120
"""Only a guard against a hung script: Ctrl-C normally ends it in well under a second."""


def test_ctrl_c_on_a_blocking_call_leaves_the_job_running_and_says_how_to_reattach(
    local_backend: ScenarioBackend, tmp_path: Path
) -> None:
    started, gate = tmp_path / "started", tmp_path / "gate"
    process = start_script(
        tmp_path,
        """
            import os
            import sys
            import threading
            import kinetic
            import batch_userfuncs as uf

            started, gate = sys.argv[1], sys.argv[2]
            step = kinetic.run(accelerator="cpu", backend="local")(uf.step)

            def waiting():  # the job runs, and the call copies its output while it waits
                names = {thread.name for thread in threading.enumerate()}
                return os.path.exists(started) and "kinetic-logs" in names

            def announce():
                while not waiting():
                    threading.Event().wait(0.01)
                # One write: print() writes the text and its newline separately, and the
                # call's copier thread can put a line of the job's between the two.
                sys.stdout.write("<<script ready>>\\n")
                sys.stdout.flush()

            threading.Thread(target=announce, daemon=True).start()
            step(7, create=started, wait_for=gate)
            """,
        str(started),
        str(gate),
    )
    try:
        assert process.stdout is not None
        # The job's own output comes first on the same stdout (the call copies it).
        for line in process.stdout:
            if _READY in line:  # the copier may still glue a partial job line to it
                break
        else:
            raise AssertionError(process.communicate(timeout=_HANG_GUARD_S))
        process.send_signal(signal.SIGINT)
        errors = process.communicate(timeout=_HANG_GUARD_S)[1]
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode != 0
    assert "KeyboardInterrupt" in errors, errors
    assert "Interrupted: job " in errors and " keeps running." in errors, errors
    job_id = errors.split("Interrupted: job ", 1)[1].split()[0]
    assert f"kinetic.attach({job_id!r}, backend='local').result()" in errors, errors
    assert f"`kinetic jobs result {job_id}`" in errors, errors

    # The job was not the script's to stop: it runs on, and reattaching collects it.
    job = kinetic.attach(job_id, backend="local")
    assert job.status() is JobStatus.RUNNING
    gate.touch()
    wait_until(lambda: job.status() is JobStatus.SUCCEEDED, "the job to finish")
    assert job.result(timeout=60) == 7
