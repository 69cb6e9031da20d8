"""The local backend starts its pending jobs by priority, then in the order they were
submitted, says where each waits, and refuses a priority class it does not have before
anything is stored (issue 49). Real supervisors and runtimes, one slot."""

import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import kinetic
from kinetic.handle import JobHandle
from kinetic.local import backend as local_backend
from kinetic_protocol import ConfigError, JobState, JobStatus
from kinetic_protocol.queueing import QueuePlace
from kinetic_runtime.stores import default_local_store_uri, open_store

sys.path.insert(0, str(Path(__file__).resolve().parent))

import queue_userfuncs as uf

WaitUntil = Callable[[str, Callable[[], bool]], None]

pytestmark = pytest.mark.usefixtures("clean_kinetic_env")


@pytest.fixture
def gate(tmp_path: Path) -> Iterator[Path]:
    """The file whose appearance ends ``uf.hold``; made at the end of the test whatever
    happened, so a failed test leaves no job holding on."""
    path = tmp_path / "gate"
    yield path
    path.touch()


def _places(jobs: dict[str, JobHandle]) -> dict[str, QueuePlace | None]:
    return {label: job.status_detail().queue for label, job in jobs.items()}


@pytest.mark.usefixtures("one_slot")
def test_with_one_slot_the_waiting_jobs_start_high_normal_low(
    tmp_path: Path, gate: Path, wait_until: WaitUntil
) -> None:
    run = kinetic.run(accelerator="cpu", backend="local")
    log = tmp_path / "started"
    blocker = run(uf.hold).run_async(str(gate))
    wait_until("the first job to take the slot", lambda: blocker.status() is JobStatus.RUNNING)
    note = run(uf.note_start)
    jobs = {
        label: note.with_options(priority=label).run_async(str(log), label)
        for label in ("low", "normal", "high")
    }
    wait_until(
        "all three jobs to wait in line",
        lambda: all(place and place.waiting == 3 for place in _places(jobs).values()),
    )
    places = _places(jobs)
    assert {label: place.position for label, place in places.items() if place} == {
        "high": 1,
        "normal": 2,
        "low": 3,
    }
    assert places["low"] == QueuePlace(queue="kinetic", position=3, waiting=3, priority="low")
    assert jobs["normal"].status_detail().describe() == "PENDING (queued in kinetic: 2nd of 3)"

    gate.touch()
    assert [jobs[label].result() for label in jobs] == ["low", "normal", "high"]
    assert log.read_text().split() == ["high", "normal", "low"]
    assert blocker.status() is JobStatus.SUCCEEDED


@pytest.mark.parametrize("call", ["run_async", "run_async_map"])
def test_an_unknown_priority_class_is_refused_before_anything_is_stored(call: str) -> None:
    run = kinetic.run(accelerator="cpu", backend="local")
    first = run(uf.note_start).run_async("/dev/null", "first")
    assert first.result(cleanup=False) == "first"
    store = open_store(default_local_store_uri())
    before = store.list("")
    assert any(first.job_id in key for key in before)
    remote = run(uf.note_start).with_options(priority="urgent")
    submit = remote.run_async if call == "run_async" else remote.run_async_map
    args = ("/dev/null", "refused") if call == "run_async" else ([("/dev/null", "refused")],)
    with pytest.raises(ConfigError, match=r"'urgent'.*low \(-100\), normal \(0\), high \(100\)"):
        submit(*args)
    assert store.list("") == before
    assert [job.job_id for job in kinetic.list_jobs(backend="local")] == [first.job_id]


@pytest.mark.usefixtures("one_slot")
def test_a_look_at_a_batch_reads_the_line_once_and_no_waiting_childs_directory(
    tmp_path: Path, gate: Path, wait_until: WaitUntil, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = kinetic.run(accelerator="cpu", backend="local")
    log = tmp_path / "started"
    blocker = run(uf.hold).run_async(str(gate))
    wait_until("the first job to take the slot", lambda: blocker.status() is JobStatus.RUNNING)
    labels = [str(index) for index in range(4)]
    batch = run(uf.note_start).run_async_map([(str(log), label) for label in labels])
    batch.wait_submitted()
    read: list[str] = []
    real_job_state = local_backend.job_state

    def job_state(job_dir: Path, *args: Any) -> JobState:
        if threading.current_thread() is threading.main_thread():  # not the batch's submitter
            read.append(job_dir.name)
        return real_job_state(job_dir, *args)

    with monkeypatch.context() as patched:
        patched.setattr(local_backend, "job_state", job_state)
        places = {labels[index]: state.queue for index, state in batch.states()}
        positions = {label: place.position for label, place in places.items() if place}
        assert {place.waiting for place in places.values() if place} == {4}
        in_line = sorted(positions, key=positions.__getitem__)
        assert [positions[label] for label in in_line] == [1, 2, 3, 4]
        assert read == [batch.jobs[0].job_id], "the first waiting child found the line"
    gate.touch()
    assert batch.results() == labels
    assert log.read_text().split() == in_line, "they started in the places they were told"
