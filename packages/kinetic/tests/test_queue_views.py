"""How a waiting job's place is put into words and numbers, from states as a backend reports
them: the line a blocking call prints when the place changes, and a batch's one-line summary
of its queued inputs (issue 49). The states are made here; the backends' own are tested with
real jobs (``tests/local/test_queue_display.py``)."""

import logging

import pytest

from kinetic._waiting import QueueLine
from kinetic.batch.queued import queued_children, queued_places
from kinetic.display import queue_text
from kinetic.handle import JobHandle
from kinetic_protocol import JobState, JobStatus
from kinetic_protocol.queueing import QueuePlace


def _queued(position: int | None, waiting: int | None = 7, queue: str = "team-a") -> JobState:
    place = QueuePlace(queue=queue, cluster_queue="tpu", position=position, waiting=waiting)
    return JobState(status=JobStatus.PENDING, detail=place.describe(), queue=place)


RUNNING = JobState(status=JobStatus.RUNNING)
PENDING = JobState(status=JobStatus.PENDING)


def _said(states: list[JobState], caplog: pytest.LogCaptureFixture) -> list[str]:
    caplog.set_level(logging.WARNING, logger="kinetic")
    line = QueueLine("job-1")
    for state in states:
        line(state)
    return [record.getMessage() for record in caplog.records]


def test_a_blocking_call_says_the_first_place_and_each_new_position_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    states = [PENDING, _queued(3), _queued(3, waiting=9), _queued(2), _queued(2), RUNNING]
    assert _said(states, caplog) == [
        "Job job-1: queued in team-a (cluster queue tpu): 3rd of 7",
        "Job job-1: queued in team-a (cluster queue tpu): 2nd of 7",
    ]


def test_a_job_queued_again_after_it_ran_is_told_about_afresh(
    caplog: pytest.LogCaptureFixture,
) -> None:
    said = _said([_queued(1), RUNNING, _queued(1), _queued(None)], caplog)
    assert [line.split(": ", 1)[1] for line in said] == [
        "queued in team-a (cluster queue tpu): 1st of 7",
        "queued in team-a (cluster queue tpu): 1st of 7",
        "queued in team-a (cluster queue tpu)",
    ]


def test_a_job_that_never_queues_says_nothing(caplog: pytest.LogCaptureFixture) -> None:
    assert _said([PENDING, RUNNING, JobState(status=JobStatus.SUCCEEDED)], caplog) == []


def test_a_batch_sums_up_its_queued_inputs_with_the_nearest_the_front() -> None:
    states = {
        0: RUNNING,
        1: _queued(5),
        2: _queued(None),
        3: _queued(2, queue="team-b"),
        4: PENDING,
    }
    assert [index for index, _ in queued_places(states)] == [3, 1, 2]
    summary = queued_children(states)
    assert summary is not None
    assert summary.describe() == "3 inputs queued in team-a, team-b, the first 2nd of 7"
    assert summary.as_dict() == {
        "count": 3,
        "queues": ["team-a", "team-b"],
        "first_index": 3,
        "first": {"queue": "team-b", "cluster_queue": "tpu", "position": 2, "waiting": 7},
    }


@pytest.mark.parametrize(
    ("states", "said"),
    [
        ({0: _queued(4, waiting=None)}, "1 input queued in team-a: 4th"),
        ({0: _queued(None), 1: _queued(None)}, "2 inputs queued in team-a"),
    ],
)
def test_a_batch_summary_says_what_is_known(states: dict[int, JobState], said: str) -> None:
    summary = queued_children(states)
    assert summary is not None and summary.describe() == said


def test_a_batch_with_nothing_queued_has_no_summary() -> None:
    assert queued_children({0: RUNNING, 1: PENDING}) is None


@pytest.mark.parametrize(
    ("queue", "priority", "text"),
    [
        ("team-a", "high", "team-a, priority high"),
        ("kinetic", "", "kinetic"),
        ("", "low", "priority low"),
    ],
)
def test_a_jobs_queue_and_class_in_words(queue: str, priority: str, text: str) -> None:
    job = JobHandle(
        "j",
        "local",
        "",
        "",
        "",
        "",
        "",
        "j",
        "",
        "cpu",
        "f",
        "f on cpu",
        "2026-01-01",
        queue=queue,
        priority=priority,
    )
    assert queue_text(job) == text
