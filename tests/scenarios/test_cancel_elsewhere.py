"""Cancelling a batch from another process stops the process that is still submitting it."""

import subprocess
import sys
import textwrap
from pathlib import Path

from scenario_support import ScenarioBackend, wait_until

import kinetic
from kinetic_protocol import layout


def test_cancel_from_another_process_stops_the_submitting_process(
    kinetic_backend: ScenarioBackend, tmp_path: Path
) -> None:
    """The submitter runs one input at a time over inputs that wait on files; a cancel
    from here kills the running child and the submitter submits nothing more and exits."""
    gates = tmp_path / "gates"
    gates.mkdir()
    script = tmp_path / "submitter.py"
    script.write_text(
        textwrap.dedent(
            f"""
            import sys
            sys.path.insert(0, {str(Path(__file__).parent)!r})
            import kinetic, batch_userfuncs as uf
            step = kinetic.run(accelerator="cpu", backend={kinetic_backend.name!r})(uf.step)
            inputs = [{{"value": i, "wait_for": {str(gates)!r} + f"/{{i}}"}} for i in range(6)]
            batch = step.run_async_map(inputs, max_concurrent=1)
            print(batch.group_id, flush=True)
            """
        )
    )
    with subprocess.Popen(
        [sys.executable, str(script)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    ) as submitter:
        assert submitter.stdout is not None
        group_id = submitter.stdout.readline().strip()
        store = kinetic_backend.store()
        children = layout.children_prefix(group_id)
        wait_until(lambda: len(store.list(children)) == 1, "the first child to be submitted")

        attached = kinetic.attach_batch(group_id, backend=kinetic_backend.name, poll_interval=0.1)
        attached.cancel()

        _, errors = submitter.communicate(timeout=60)  # cancelled: nothing left to wait for
        assert submitter.returncode == 0, errors
        assert len(store.list(children)) == 1, "the submitter kept submitting after the cancel"
        first = attached.jobs[0]
        assert first is not None
        assert first.status() is kinetic.JobStatus.NOT_FOUND
