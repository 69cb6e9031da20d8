"""Where a waiting job stands, shown: ``kinetic batch status`` (one line for the batch, each
input with ``--queued``, data with ``--json``), ``kinetic jobs status``, the notebook views, and
the line a blocking call prints each time its place changes (issue 49). Real local jobs behind
one slot, so the places are the backend's own."""

import json
import logging
import sys
import threading
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

import kinetic
from kinetic.cli import cli

sys.path.insert(0, str(Path(__file__).resolve().parent))

import queue_userfuncs as uf

WaitUntil = Callable[[str, Callable[[], bool]], None]

pytestmark = pytest.mark.usefixtures("one_slot")

RUN = kinetic.run(accelerator="cpu", backend="local")


def _invoke(*args: str) -> Result:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False, prog_name="kinetic")
    assert result.exit_code == 0, result.stderr
    return result


def test_a_batch_waiting_behind_a_running_job_shows_where_its_inputs_stand(
    tmp_path: Path, wait_until: WaitUntil
) -> None:
    gate = tmp_path / "gate"
    blocker = RUN(uf.hold).run_async(str(gate))
    wait_until("the first job to take the slot", lambda: blocker.status().value == "RUNNING")
    batch = RUN(uf.note_start).run_async_map(
        [("/dev/null", label) for label in "abc"], max_concurrent=None, priority="low"
    )
    wait_until(
        "the three inputs to wait in line",
        lambda: [s.queue.waiting if s.queue else None for _, s in batch.states()] == [3, 3, 3],
    )
    try:
        document = json.loads(_invoke("batch", "status", batch.group_id, "--json").stdout)
        # The children were submitted side by side: their order in line is the submitter's.
        positions = [job["queue_place"]["position"] for job in document["jobs"]]
        assert sorted(positions) == [1, 2, 3]
        first, last = positions.index(1), positions.index(3)
        assert document["queued"] == {
            "count": 3,
            "queues": ["kinetic"],
            "first_index": first,
            "first": {"queue": "kinetic", "position": 1, "waiting": 3, "priority": "low"},
        }
        human = _invoke("batch", "status", batch.group_id).stdout
        assert "Queued:     3 inputs queued in kinetic, the first 1st of 3" in human
        assert "INPUT" not in human
        listed = _invoke("batch", "status", batch.group_id, "--queued").stdout.splitlines()
        child = batch.jobs[last]
        assert child is not None
        assert listed[-1].split()[:2] == [str(last), child.job_id]
        assert listed[-1].endswith("queued in kinetic: 3rd of 3")

        shown = _invoke("jobs", "status", child.job_id).stdout
        assert "PENDING (queued in kinetic: 3rd of 3)" in shown
        assert "Queue:       kinetic, priority low" in shown
        job_document = json.loads(_invoke("jobs", "status", child.job_id, "--json").stdout)
        assert job_document["queue_place"] == {
            "queue": "kinetic",
            "position": 3,
            "waiting": 3,
            "priority": "low",
        }
        assert (job_document["queue"], job_document["priority"]) == ("kinetic", "low")

        assert "3 inputs queued in kinetic, the first 1st of 3" in batch._repr_html_()
        html = child._repr_html_()
        assert "PENDING (queued in kinetic: 3rd of 3)" in html
        assert "kinetic, priority low" in html
    finally:
        gate.touch()
    assert batch.results() == ["a", "b", "c"]
    assert json.loads(_invoke("batch", "status", batch.group_id, "--json").stdout)["queued"] is None


def test_a_blocking_call_says_each_new_place_in_line(
    tmp_path: Path, wait_until: WaitUntil, caplog: pytest.LogCaptureFixture
) -> None:
    """Behind a running job and a waiting one, a blocking call is 2nd of 2; once the one ahead
    runs, it is 1st of 1: one line each, and none while its place stays the same."""
    first_gate, second_gate = tmp_path / "first", tmp_path / "second"
    blocker = RUN(uf.hold).run_async(str(first_gate))
    wait_until("the first job to take the slot", lambda: blocker.status().value == "RUNNING")
    ahead = RUN(uf.hold).run_async(str(second_gate))
    wait_until("the second job to wait", lambda: ahead.status_detail().queue is not None)
    caplog.set_level(logging.WARNING, logger="kinetic")
    lines: list[str] = []

    def said(text: str) -> bool:
        lines[:] = [r.getMessage() for r in caplog.records if "queued in" in r.getMessage()]
        return any(text in line for line in lines)

    returned: list[str] = []
    call = threading.Thread(
        target=lambda: returned.append(
            RUN(uf.note_start).with_options(priority="low")("/dev/null", "blocking")
        ),
        daemon=True,
    )
    call.start()
    try:
        wait_until("the call to say it is 2nd", lambda: said("2nd of 2"))
        first_gate.touch()
        wait_until("the call to say it is 1st", lambda: said("1st of 1"))
    finally:
        first_gate.touch()
        second_gate.touch()
    call.join(60)
    assert returned == ["blocking"]
    assert [line.split(": ", 1)[1] for line in lines] == [
        "queued in kinetic: 2nd of 2",
        "queued in kinetic: 1st of 1",
    ]
    assert all(line.startswith("Job note-start-") for line in lines)
