"""Every record of a submission carries its queue and priority class: a job's, a batch's
template and each of its children, stored and on the handle (issue 49). The local backend
resolves a job that names no queue to Kinetic's default queue."""

import sys
from pathlib import Path

import pytest

import kinetic
from kinetic_protocol.queueing import DEFAULT_QUEUE

sys.path.insert(0, str(Path(__file__).resolve().parent))

import queue_userfuncs as uf

pytestmark = pytest.mark.usefixtures("clean_kinetic_env")


def test_a_jobs_record_carries_the_class_and_the_backends_default_queue() -> None:
    remote = kinetic.run(accelerator="cpu", backend="local", priority="high")(uf.note_start)
    job = remote.run_async("/dev/null", "job")
    assert (job.queue, job.priority) == (DEFAULT_QUEUE, "high")
    assert job.to_dict()["queue"] == DEFAULT_QUEUE and job.to_dict()["priority"] == "high"
    stored = kinetic.attach(job.job_id)
    assert (stored.record.queue, stored.record.priority) == (DEFAULT_QUEUE, "high")
    assert job.result() == "job"


def test_the_queue_of_the_variable_is_recorded_and_no_class_is_empty(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("KINETIC_QUEUE", "team-b")
    job = kinetic.run(accelerator="cpu", backend="local")(uf.note_start).run_async("/dev/null", "x")
    assert (kinetic.attach(job.job_id).queue, job.priority) == ("team-b", "")
    assert job.result() == "x"


def test_a_batchs_template_and_children_carry_the_calls_queue_and_class() -> None:
    remote = kinetic.run(accelerator="cpu", backend="local", priority="high")(uf.note_start)
    batch = remote.run_async_map(
        [("/dev/null", "a"), ("/dev/null", "b")],
        queue="team-a",
        priority="low",
        max_concurrent=None,
    )
    template = kinetic.attach_batch(batch.group_id)._manifest.job_template
    assert (template.queue, template.priority) == ("team-a", "low")
    children = [job for job in batch.jobs if job is not None]
    assert [(job.queue, job.priority) for job in children] == [("team-a", "low")] * 2
    assert [(kinetic.attach(job.job_id).queue) for job in children] == ["team-a"] * 2
    assert batch.results() == ["a", "b"]
