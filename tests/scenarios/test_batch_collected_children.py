"""A batch's children collected one by one, as the batch guide chains its examples: the batch
keeps what each child's own ``result()`` read, and a child cleaned up by a collection says so
instead of showing empty logs."""

from pathlib import Path

import batch_userfuncs as uf
import pytest
from scenario_support import ScenarioBackend, run_script

import kinetic
from kinetic import JobStatus
from kinetic.batch import BatchError
from kinetic.bookkeeping.kept import CLEANED_UP
from kinetic_protocol import JobNotFoundError


def test_children_collected_through_their_own_handles_leave_the_batch_its_values(
    kinetic_backend: ScenarioBackend,
) -> None:
    square = kinetic_backend.decorate()(uf.square)
    batch = square.run_async_map([1, 2, 3])
    seen = {job.group_index: job.result() for job in batch.as_completed(poll_interval=0.2)}
    assert seen == {0: 1, 1: 4, 2: 9}
    children = [job for job in batch.jobs if job is not None]
    assert [job.status() for job in children] == [JobStatus.NOT_FOUND] * 3  # cleaned up

    # Nothing failed: the batch returns the values its children's handles read.
    assert batch.results() == [1, 4, 9]
    assert batch.failures() == []
    assert batch.status_counts() == {"NOT_FOUND": 3}  # keys are JobStatus values
    assert [state.detail for _, state in batch.states()] == [CLEANED_UP] * 3
    attached = kinetic.attach_batch(batch.group_id, backend=kinetic_backend.name)
    assert attached.results() == [1, 4, 9]


def test_a_child_collected_and_cleaned_up_says_so_or_shows_the_last_lines_its_batch_kept(
    kinetic_backend: ScenarioBackend,
) -> None:
    say = kinetic_backend.decorate()(uf.say)
    batch = say.run_async_map([{"name": "ok"}, {"name": "bad", "fail": True}])
    with pytest.raises(BatchError) as raised:
        batch.results()  # cleanup=True: every child, the failed one too, is deleted
    [failed] = raised.value.failures
    assert failed.group_index == 1
    succeeded = batch.jobs[0]
    assert succeeded is not None

    # status() stays a JobStatus (NOT_FOUND: the resource is gone, as the lifecycle says);
    # its detail says why.
    assert failed.status() is JobStatus.NOT_FOUND
    assert failed.status_detail().detail == CLEANED_UP
    # The failed child's last lines were kept with the batch; the one that succeeded has no
    # logs any more, and says so.
    assert "goodbye from bad" in failed.tail(n=20)
    assert "goodbye from bad" in (failed.logs() or "")
    for read_logs in (lambda: succeeded.tail(n=20), succeeded.logs):
        with pytest.raises(JobNotFoundError, match="collected and cleaned up") as gone:
            read_logs()
        assert "results(cleanup=False)" in str(gone.value)
        assert succeeded.job_id in str(gone.value)


def test_a_child_kept_by_results_without_cleanup_still_shows_its_logs(
    kinetic_backend: ScenarioBackend,
) -> None:
    say = kinetic_backend.decorate()(uf.say)
    batch = say.run_async_map([{"name": "bad", "fail": True}])
    outcomes = batch.results(cleanup=False, return_exceptions=True)
    assert isinstance(outcomes[0], uf.BatchUserError)
    [failed] = batch.failures()
    assert "goodbye from bad" in failed.tail(n=20)
    assert failed.status() is JobStatus.FAILED


@pytest.mark.backends("local")
def test_a_fail_fast_batch_prints_no_log_lines_in_a_script_that_configured_no_logging(
    kinetic_backend: ScenarioBackend, tmp_path: Path
) -> None:
    done = run_script(
        """
        import kinetic

        @kinetic.run(accelerator="cpu", backend="local")
        def check(x):
            if x == 0:
                raise ValueError("input 0 is bad")
            return x

        batch = check.run_async_map([0, 1, 2], max_concurrent=1, fail_fast=True)
        outcomes = batch.results(return_exceptions=True)
        print(type(outcomes[0]).__name__, batch.status_counts())
        """,
        tmp_path,
        timeout=120,
    )
    assert done.stdout.startswith("ValueError {")
    assert done.stderr == ""  # not "event='batch.fail_fast' cancelling_running=False"
