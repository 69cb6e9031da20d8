"""Cancelling jobs that are still PENDING, on every scenario backend: a job cancelled while it
waits for room must never run, whether it is cancelled by ``JobHandle.cancel()``, by
``BatchHandle.cancel()`` or by fail-fast with ``cancel_running_on_fail``.

"No room" is made per backend by the ``no_room`` fixture. Local: one slot
(``KINETIC_LOCAL_SLOTS=1``), held by a blocker job that waits for a file. GKE: an accelerator
that no node pool offers, so the scheduler leaves the pod Pending and Unschedulable.
``release()`` makes room again, so a job that escaped the cancel would then run and leave its
marker file. The example backend starts every job at once (it has no PENDING), so these run
on the two backends that queue.
"""

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import batch_userfuncs as uf
import pytest
import scenario_funcs
from batch_support import join_batch_thread
from scenario_support import ScenarioBackend, wait_until

from kinetic import JobFailedError, JobHandle, JobStatus
from kinetic.batch import submitter as submitter_module
from kinetic.batch.submitter import submit_child
from kinetic_protocol import JobRecord, JobState
from kinetic_runtime.local.slot_queue import waiting_jobs

NO_NODE_ACCELERATOR = "gpu-h100"
"""An accelerator no node of the gke test cluster offers."""


pytestmark = pytest.mark.backends("local", "gke")
"""The scenario backends that can hold a job PENDING for lack of room."""


@dataclass
class NoRoom:
    """While in force, every job submitted with ``options`` stays PENDING."""

    options: dict[str, Any]
    wait_pending: Callable[[JobHandle], None]
    """Return once the job is PENDING for lack of room (not merely not yet looked at)."""
    _release: Callable[[], None]
    released: bool = field(default=False, init=False)

    def release(self) -> None:
        if not self.released:
            self.released = True
            self._release()


def _local_no_room(
    backend: ScenarioBackend, home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> NoRoom:
    monkeypatch.setenv("KINETIC_LOCAL_SLOTS", "1")
    gate = tmp_path / "blocker-gate"
    blocker = backend.decorate()(scenario_funcs.hold).run_async(str(gate), "blocker")
    wait_until(lambda: blocker.status() is JobStatus.RUNNING, "the blocker to take the slot")

    def wait_pending(job: JobHandle) -> None:
        slots_dir = home / "local" / "slots"
        wait_until(
            lambda: job.job_id in waiting_jobs(slots_dir),
            f"{job.job_id} to wait in line for the slot (a record: issue 53)",
        )
        assert job.status() is JobStatus.PENDING

    def release() -> None:
        gate.touch()
        assert blocker.result(timeout=60) == "blocker"  # the slot is free once it has ended

    return NoRoom({}, wait_pending, release)


def _gke_no_room(request: pytest.FixtureRequest) -> NoRoom:
    request.getfixturevalue("gke_scenario_env")

    def unschedulable_or_past_pending(job: JobHandle) -> JobState | None:
        state = job.status_detail()
        if state.status is not JobStatus.PENDING or "Unschedulable" in state.detail:
            return state
        return None

    def wait_pending(job: JobHandle) -> None:
        state = wait_until(
            lambda: unschedulable_or_past_pending(job),
            f"the pod of {job.job_id} to be reported unschedulable",
        )
        assert state.status is JobStatus.PENDING, state

    def release() -> None:
        """No node will ever offer the accelerator; a cancelled job must be gone regardless."""

    return NoRoom({"accelerator": NO_NODE_ACCELERATOR}, wait_pending, release)


@pytest.fixture
def no_room(
    kinetic_backend: ScenarioBackend,
    request: pytest.FixtureRequest,
    isolated_kinetic: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> NoRoom:
    if kinetic_backend.name == "local":
        return _local_no_room(kinetic_backend, isolated_kinetic, tmp_path, monkeypatch)
    if kinetic_backend.name == "gke":
        return _gke_no_room(request)
    raise NotImplementedError(f"no way to keep a {kinetic_backend.name} job pending")


def test_cancelling_a_pending_job_means_it_never_runs(
    kinetic_backend: ScenarioBackend, no_room: NoRoom, tmp_path: Path
) -> None:
    ran = tmp_path / "ran"
    step = kinetic_backend.decorate(**no_room.options)(uf.step)
    job = step.run_async("ran", create=str(ran))
    no_room.wait_pending(job)

    job.cancel(cleanup_timeout=30, cleanup_poll_interval=0.05)
    assert job.status() is JobStatus.NOT_FOUND
    no_room.release()

    assert not ran.exists(), "the cancelled job ran once there was room"
    assert job.status() is JobStatus.NOT_FOUND
    with pytest.raises(JobFailedError, match="NOT_FOUND"):
        job.result(timeout=30)


def test_batch_cancel_cancels_children_still_pending(
    kinetic_backend: ScenarioBackend, no_room: NoRoom, tmp_path: Path
) -> None:
    """Spec: ``batch.cancel()`` cancels every non-terminal child, PENDING ones included."""
    markers = [tmp_path / f"ran-{i}" for i in range(2)]
    step = kinetic_backend.decorate(**no_room.options)(uf.step)
    batch = step.run_async_map(
        [{"value": i, "create": str(marker)} for i, marker in enumerate(markers)],
        max_concurrent=None,
    )
    join_batch_thread(batch.group_id)
    for job in batch.jobs:
        assert job is not None
        no_room.wait_pending(job)

    batch.cancel()
    assert [status for _, status in batch.statuses()] == [JobStatus.NOT_FOUND] * 2
    no_room.release()

    outcomes = batch.results(return_exceptions=True, timeout=60)
    assert [type(outcome) for outcome in outcomes] == [JobFailedError, JobFailedError]
    assert [marker.exists() for marker in markers] == [False, False], "a cancelled child ran"


class SubmissionRefused(Exception):
    """What the test makes the submission of one input raise."""


@pytest.mark.backends("local")
def test_fail_fast_cancels_siblings_still_pending(
    kinetic_backend: ScenarioBackend,
    no_room: NoRoom,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With ``cancel_running_on_fail``, a failure cancels siblings that are still waiting too.

    Input 0 is submitted and left PENDING; only then is input 1's submission let fail (a
    failure, per the spec, is a submission error as well as a failed job). A gke batch is one
    Indexed Job, submitted whole, so no input's submission can fail after another's: its
    fail-fast over pending indexes is ``test_batch_arrays.py``'s.
    """
    fail_now = threading.Event()

    def refusing_submit(backend: Any, records: Any, record: JobRecord, **kw: Any) -> Any:
        if record.group_index == 1:
            assert fail_now.wait(60)
            raise SubmissionRefused("the cluster refused input 1 (injected by the test)")
        return submit_child(backend, records, record, **kw)

    monkeypatch.setattr(submitter_module, "submit_child", refusing_submit)
    ran = tmp_path / "ran-0"
    step = kinetic_backend.decorate(**no_room.options)(uf.step)
    batch = step.run_async_map(
        [{"value": 0, "create": str(ran)}, {"value": 1}],
        max_concurrent=2,
        fail_fast=True,
        cancel_running_on_fail=True,
    )
    try:
        try:
            pending = wait_until(lambda: batch.jobs[0], "input 0 to be submitted")
            no_room.wait_pending(pending)
        finally:
            fail_now.set()
        wait_until(
            lambda: pending.status() is JobStatus.NOT_FOUND,
            "fail-fast to cancel the pending input 0",
        )
        join_batch_thread(batch.group_id)
    except BaseException:
        batch.cancel()  # stops the submitter, which would otherwise watch input 0 for ever
        raise
    no_room.release()

    outcomes = batch.results(return_exceptions=True, timeout=60)
    assert isinstance(outcomes[0], JobFailedError), outcomes
    assert isinstance(outcomes[1], SubmissionRefused), outcomes
    assert not ran.exists(), "the cancelled sibling ran once there was room"
    assert pending.status() is JobStatus.NOT_FOUND
