"""``ChildJobs``, a batch's handles kept as attempt numbers until read, reads like the list of
handles that attach built before: same length, same handles in the same places, the same
object each time a place is read, and the rule of which attempt is latest."""

import dataclasses
from typing import cast

import pytest

from kinetic.batch.children import ChildJobs
from kinetic.batch.observe import latest_states
from kinetic.batch.state import BatchState
from kinetic.jobs import JobHandle
from kinetic_protocol import Backend, BatchManifest, JobRecord, JobState, JobStatus, RetryRule
from kinetic_testing.records import job_record

TOTAL = 5


def _manifest(*, array_job: bool = False) -> BatchManifest:
    template = job_record(namespace="default", bucket_name="file:///nowhere")
    return BatchManifest(
        group_id="grp-0123abcd",
        func_name="f",
        total_expected=TOTAL,
        job_id_prefix="f-0123abcd",
        job_template=template,
        created_at=template.created_at,
        array_job="f-0123abcd" if array_job else "",
    )


def _eager(manifest: BatchManifest, latest: dict[int, int]) -> list[JobHandle | None]:
    """The list attach built before: a handle made at once for every latest attempt."""
    return [
        JobHandle.from_record(manifest.child_record(index, latest[index]))
        if index in latest
        else None
        for index in range(manifest.total_expected)
    ]


LATEST = {0: 0, 2: 1, 4: 0}


@pytest.fixture
def manifest() -> BatchManifest:
    return _manifest()


@pytest.fixture
def followed(manifest: BatchManifest) -> ChildJobs:
    jobs = ChildJobs(TOTAL, manifest)
    jobs.follow(LATEST)
    return jobs


def test_it_reads_as_the_list_of_handles_made_at_once(
    manifest: BatchManifest, followed: ChildJobs
) -> None:
    eager = _eager(manifest, LATEST)
    assert len(followed) == len(eager) == TOTAL
    assert [followed[index] for index in range(TOTAL)] == eager
    assert followed[-1] == eager[-1] and followed[1:4] == eager[1:4]
    assert list(followed) == eager
    second = followed[2]
    assert second is not None and second.job_id == manifest.child_job_id(2, 1)
    assert second.record == manifest.child_record(2, 1)
    assert [dataclasses.asdict(job) if job else None for job in followed] == [
        dataclasses.asdict(job) if job else None for job in eager
    ]
    with pytest.raises(IndexError):
        followed[TOTAL]


def test_a_place_read_twice_is_the_same_handle(followed: ChildJobs) -> None:
    first = followed[0]
    assert first is not None and followed[0] is first and followed[-TOTAL] is first
    assert all(a is b for a, b in zip(followed, list(followed), strict=True))
    assert next(iter(followed)) is first


def test_counts_and_attempts_need_no_handle(followed: ChildJobs) -> None:
    assert followed.submitted() == 3
    assert followed.submitted_indexes() == [0, 2, 4]
    assert followed.latest_attempts() == LATEST
    assert [followed.attempt(index) for index in range(TOTAL)] == [0, None, 1, None, 0]
    assert followed._handles == [None] * TOTAL, "nothing read, nothing made"


def test_only_a_later_attempt_takes_a_place_and_skipped_inputs_stay_empty(
    manifest: BatchManifest, followed: ChildJobs
) -> None:
    kept = followed[2]
    followed.follow({2: 0, 1: 3}, skip={1})
    assert followed[2] is kept, "an earlier attempt than the one held changes nothing"
    assert followed[1] is None
    followed.follow({2: 2})
    assert followed[2] == JobHandle.from_record(manifest.child_record(2, 2))
    assert list(followed) == _eager(manifest, {**LATEST, 2: 2})


def test_a_handle_set_is_kept_as_it_is(manifest: BatchManifest, followed: ChildJobs) -> None:
    own = JobHandle.from_record(manifest.child_record(1, 0))
    followed[1] = own
    assert followed[1] is own
    assert followed.attempt(1) == 0 and followed.submitted() == 4
    followed[0] = None
    assert followed[0] is None and followed.submitted_indexes() == [1, 2, 4]
    followed[:] = [None] * TOTAL
    assert list(followed) == [None] * TOTAL and followed.submitted() == 0
    with pytest.raises(ValueError, match="one place per input"):
        followed[:] = [None] * (TOTAL + 1)


def test_an_array_batch_holds_every_first_attempt() -> None:
    manifest = _manifest(array_job=True)
    jobs = ChildJobs.first_attempts(manifest)
    assert list(jobs) == _eager(manifest, dict.fromkeys(range(TOTAL), 0))


def test_a_list_of_handles_is_copied_in(manifest: BatchManifest) -> None:
    eager = _eager(manifest, LATEST)
    jobs = ChildJobs.of(eager)
    assert list(jobs) == eager and all(a is b for a, b in zip(jobs, eager, strict=True))
    assert ChildJobs.of(jobs) is jobs


def test_a_batch_state_settles_the_handles_it_reads(followed: ChildJobs) -> None:
    state = BatchState(total=TOTAL, rule=RetryRule(retries=0), jobs=followed)
    pending = state.unsettled_jobs()
    assert list(pending) == [0, 2, 4]
    done = JobState(status=JobStatus.SUCCEEDED)
    for index, job in pending.items():
        assert state.settle(index, job, done), "the handle read is the one held"
    state.submission_done.set()
    assert state.all_settled() and state.unsettled_jobs() == {}


def test_the_records_of_the_latest_attempts_need_no_handle(
    manifest: BatchManifest, followed: ChildJobs
) -> None:
    own = JobHandle.from_record(manifest.child_record(1, 0))
    followed[1] = own
    records = followed.records()
    assert records == {
        index: manifest.child_record(index, n) for index, n in {**LATEST, 1: 0}.items()
    }
    assert records[1] is own.record, "a handle set gives its own record"
    assert followed._handles == [None, own, None, None, None], "no other handle made"


class _RunsInputTwoAgain:
    """An array backend's answers: every attempt runs, and input 2's attempt 1 failed and was
    run again as attempt 2 (its state names the next attempt)."""

    def __init__(self) -> None:
        self.asked: list[list[str]] = []

    def statuses(self, records: list[JobRecord]) -> dict[str, JobState]:
        self.asked.append([record.job_id for record in records])
        return {
            record.job_id: JobState(
                status=JobStatus.FAILED if record.attempt == 1 else JobStatus.RUNNING,
                next_attempt=2 if record.attempt == 1 else None,
            )
            for record in records
        }


def test_a_look_at_every_child_follows_a_later_attempt_without_making_handles(
    manifest: BatchManifest, followed: ChildJobs
) -> None:
    state = BatchState(total=TOTAL, rule=RetryRule(retries=0), jobs=followed)
    backend = _RunsInputTwoAgain()
    latest = latest_states(manifest, cast(Backend, backend), state, followed.records())
    assert {index: (record.attempt, seen.status) for index, (record, seen) in latest.items()} == {
        0: (0, JobStatus.RUNNING),
        2: (2, JobStatus.RUNNING),
        4: (0, JobStatus.RUNNING),
    }
    assert backend.asked[1] == [manifest.child_job_id(2, 2)], "one more call, for it alone"
    assert followed.attempt(2) == 2, "the later attempt takes the input's place"
    assert followed._handles == [None] * TOTAL, "and no handle was made"
