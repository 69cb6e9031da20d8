"""The settlement rule shared by the submitter and the handle (``kinetic.batch.state``)."""

import itertools
import threading
from pathlib import Path

import cloudpickle
import pytest

from kinetic.batch.state import BatchState, Decision, effective_state
from kinetic.jobs import JobHandle
from kinetic_protocol import Failed, JobState, JobStatus, RetryRule, Succeeded, layout
from kinetic_runtime.stores.local import LocalStore
from kinetic_testing.records import job_record
from kinetic_testing.signed import seal_result

W, R, S, F = Decision.WAIT, Decision.RETRY, Decision.SUCCEEDED, Decision.FAILED


def _handle(
    job_id: str = "job-0", *, attempt: int = 0, store_uri: str = "file:///nowhere"
) -> JobHandle:
    record = job_record(job_id=job_id, bucket_name=store_uri, k8s_name=job_id, attempt=attempt)
    return JobHandle.from_record(record)


def _state(
    *,
    retries: int,
    stopping: bool = False,
    submitter_retries: bool = False,
    more_attempts: bool = False,
    total: int = 1,
) -> BatchState:
    state = BatchState(total=total, rule=RetryRule(retries=retries), jobs=[None] * total)
    if stopping:
        state.stopping.set()
    state.submitter_retries = submitter_retries
    state.more_attempts_possible = lambda: more_attempts
    return state


FLAGS = list(itertools.product([False, True], repeat=3))  # stopping, submitter, more attempts


@pytest.mark.parametrize("status", [JobStatus.PENDING, JobStatus.RUNNING])
@pytest.mark.parametrize(("stopping", "submitter_retries", "more_attempts"), FLAGS)
@pytest.mark.parametrize(("attempt", "retries"), [(0, 0), (0, 2), (2, 2)])
def test_a_job_that_is_not_terminal_is_waited_for(
    status: JobStatus,
    stopping: bool,
    submitter_retries: bool,
    more_attempts: bool,
    attempt: int,
    retries: int,
) -> None:
    state = _state(
        retries=retries,
        stopping=stopping,
        submitter_retries=submitter_retries,
        more_attempts=more_attempts,
    )
    assert state.decide(_handle(attempt=attempt), JobState(status=status)) is W


@pytest.mark.parametrize(("stopping", "submitter_retries", "more_attempts"), FLAGS)
@pytest.mark.parametrize(("attempt", "retries"), [(0, 0), (0, 2), (2, 2)])
def test_a_succeeded_job_is_settled_as_succeeded(
    stopping: bool, submitter_retries: bool, more_attempts: bool, attempt: int, retries: int
) -> None:
    state = _state(
        retries=retries,
        stopping=stopping,
        submitter_retries=submitter_retries,
        more_attempts=more_attempts,
    )
    assert state.decide(_handle(attempt=attempt), JobState(status=JobStatus.SUCCEEDED)) is S


# (attempts left, stopping, this process retries, another process may add attempts) -> decision
FAILURE_TABLE = [
    # attempts left and not stopping: retried here, else waited for, else final
    (True, False, True, False, R),
    (True, False, True, True, R),
    (True, False, False, True, W),
    (True, False, False, False, F),
    # stopping (cancel): no more attempts, whatever else holds
    (True, True, True, True, F),
    (True, True, True, False, F),
    (True, True, False, True, F),
    (True, True, False, False, F),
    # no attempts left: final
    (False, False, True, True, F),
    (False, False, True, False, F),
    (False, False, False, True, F),
    (False, False, False, False, F),
    (False, True, True, True, F),
    (False, True, True, False, F),
    (False, True, False, True, F),
    (False, True, False, False, F),
]


@pytest.mark.parametrize("status", [JobStatus.FAILED, JobStatus.NOT_FOUND])
@pytest.mark.parametrize(
    ("attempts_left", "stopping", "submitter_retries", "more_attempts", "expected"),
    FAILURE_TABLE,
)
def test_a_failed_or_vanished_job(
    status: JobStatus,
    attempts_left: bool,
    stopping: bool,
    submitter_retries: bool,
    more_attempts: bool,
    expected: Decision,
) -> None:
    state = _state(
        retries=2,
        stopping=stopping,
        submitter_retries=submitter_retries,
        more_attempts=more_attempts,
    )
    if status is JobStatus.NOT_FOUND and (stopping, submitter_retries, more_attempts) == (
        False,
        False,
        True,
    ):
        # Another process submits the batch, and writes a child's record before creating its
        # resource: a child that is not there (yet) is waited for, retries left or not.
        expected = W
    handle = _handle(attempt=1 if attempts_left else 2)
    assert state.decide(handle, JobState(status=status)) is expected


def test_the_failure_table_covers_every_combination() -> None:
    assert {row[:4] for row in FAILURE_TABLE} == set(itertools.product([True, False], repeat=4))


def test_without_retries_the_first_failure_is_final() -> None:
    state = _state(retries=0, submitter_retries=True, more_attempts=True)
    assert state.decide(_handle(attempt=0), JobState(status=JobStatus.FAILED)) is F


# -- settling -------------------------------------------------------------------------------


def test_settle_records_an_index_once_in_completion_order() -> None:
    state = _state(retries=0, total=3)
    handles = [_handle(f"job-{i}") for i in range(3)]
    state.jobs[:] = handles
    done = JobState(status=JobStatus.SUCCEEDED)
    assert state.settle(2, handles[2], done)
    assert state.settle(0, handles[0], done)
    assert not state.settle(2, handles[2], done), "an index settles once"
    assert state.settle_order == [2, 0]
    assert state.settled == {2: done, 0: done}
    assert state.unsettled_jobs() == {1: handles[1]}


def test_settle_ignores_an_attempt_that_is_no_longer_the_latest() -> None:
    state = _state(retries=1)
    old, new = _handle("job-0", attempt=0), _handle("job-0-r1", attempt=1)
    state.jobs[0] = new
    assert not state.settle(0, old, JobState(status=JobStatus.FAILED))
    assert state.settled == {}
    assert state.settle(0, new, JobState(status=JobStatus.SUCCEEDED))


def test_settle_wakes_waiters() -> None:
    state = _state(retries=0)
    handle = _handle()
    state.jobs[0] = handle
    woke = threading.Event()

    def waiter() -> None:
        with state.changed:
            while not state.settled:
                state.changed.wait(30)
        woke.set()

    thread = threading.Thread(target=waiter)
    thread.start()
    state.settle(0, handle, JobState(status=JobStatus.SUCCEEDED))
    thread.join(30)
    assert woke.is_set()


def test_all_settled_needs_the_end_of_submission_and_ignores_unsubmitted_slots() -> None:
    state = _state(retries=0, total=3)
    handle = _handle()
    state.jobs[0] = handle
    state.settle(0, handle, JobState(status=JobStatus.FAILED))
    assert not state.all_settled(), "submission is still going on"
    state.submission_done.set()
    assert state.all_settled()
    state.jobs[1] = _handle("job-1")
    assert not state.all_settled()
    assert list(state.unsettled_jobs()) == [1]


# -- effective state ------------------------------------------------------------------------


@pytest.fixture
def stored_handle(tmp_path: Path) -> tuple[JobHandle, LocalStore]:
    store = LocalStore(tmp_path / "store")
    return _handle("job-e", store_uri=store.uri), store


def _store_result(store: LocalStore, envelope: Succeeded | Failed) -> None:
    store.write(layout.result_key(envelope.job_id), seal_result(_handle("job-e").record, envelope))


SUCCESS = Succeeded(job_id="job-e", value=cloudpickle.dumps(1))
FAILURE = Failed(job_id="job-e", phase="run", exc_type="ValueError", message="no")


def test_a_vanished_job_with_a_stored_success_counts_as_succeeded(
    stored_handle: tuple[JobHandle, LocalStore],
) -> None:
    handle, store = stored_handle
    _store_result(store, SUCCESS)
    seen = effective_state(handle.record, JobState(status=JobStatus.NOT_FOUND))
    assert seen.status is JobStatus.SUCCEEDED


@pytest.mark.parametrize("envelope", [None, FAILURE], ids=["no-result", "failed-result"])
def test_a_vanished_job_without_a_stored_success_stays_not_found(
    stored_handle: tuple[JobHandle, LocalStore], envelope: Failed | None
) -> None:
    handle, store = stored_handle
    if envelope is not None:
        _store_result(store, envelope)
    gone = JobState(status=JobStatus.NOT_FOUND, detail="deleted")
    assert effective_state(handle.record, gone) == gone


@pytest.mark.parametrize(
    "status", [JobStatus.PENDING, JobStatus.RUNNING, JobStatus.FAILED, JobStatus.SUCCEEDED]
)
def test_only_not_found_is_reinterpreted(
    stored_handle: tuple[JobHandle, LocalStore], status: JobStatus
) -> None:
    handle, store = stored_handle
    _store_result(store, SUCCESS)
    state = JobState(status=status, detail="as reported")
    assert effective_state(handle.record, state) == state
