"""How a queued job's state is completed from what Kueue says of it (the rule alone; the
scenarios in ``tests/scenarios/test_queues.py`` run it against the real Kueue)."""

from collections.abc import Iterable
from typing import Any

from kinetic_gke.k8s.kueue_api import QUEUE_LABEL
from kinetic_gke.queueing.kueue_view import Queued
from kinetic_gke.queueing.states import queued_states
from kinetic_protocol import FailureCause, JobRecord, JobState, JobStatus
from kinetic_protocol.queueing import QueuePlace

PLACE = QueuePlace(queue="team-a", cluster_queue="cq", position=2, waiting=3)


class Kueue:
    """Says the same of every workload, and notes what it was asked to deactivate."""

    def __init__(self, queued: Queued) -> None:
        self.answer = queued
        self.deactivated: list[str] = []
        self.asked = 0

    def queued(self, owners: Iterable[dict[str, Any]], kind: str) -> dict[str, Queued]:
        self.asked += 1
        return {owner["metadata"]["uid"]: self.answer for owner in owners}

    def deactivate(self, workload: str) -> None:
        self.deactivated.append(workload)


def _record(retries: int = 3) -> JobRecord:
    return JobRecord(
        job_id="j",
        backend="gke",
        project="p",
        cluster_name="c",
        zone="z",
        namespace="n",
        bucket_name="b",
        k8s_name="j",
        image_uri="i",
        accelerator="cpu",
        func_name="f",
        display_name="f",
        created_at="2026-11-28T10:00:00+00:00",
        queue="team-a",
        preemption_retries=retries,
    )


def _job(labelled: bool = True) -> dict[str, Any]:
    labels = {QUEUE_LABEL: "team-a"} if labelled else {}
    return {"metadata": {"name": "j", "uid": "u1", "labels": labels}}


def _complete(kueue: Kueue, state: JobState, record: JobRecord | None = None) -> JobState:
    seen = [(record or _record(), _job(), state)]
    return queued_states(kueue, seen, "Job").get("j", state)  # type: ignore[arg-type]


def test_a_waiting_job_reads_its_place_in_line() -> None:
    kueue = Kueue(Queued("wl", PLACE, 0, ""))
    state = _complete(kueue, JobState(status=JobStatus.PENDING, detail="waiting"))
    assert state.queue == PLACE
    assert state.detail == "queued in team-a (cluster queue cq): 2nd of 3"


def test_a_job_preempted_by_its_queue_counts_it_and_says_so_while_it_waits_again() -> None:
    kueue = Kueue(Queued("wl", PLACE, 1, "Preempted to accommodate a workload"))
    state = _complete(kueue, JobState(status=JobStatus.PENDING, preemptions=1))
    assert state.preemptions == 2, "one by its node, one by its queue"
    assert state.detail.startswith("preempted (Preempted to accommodate a workload); queued in")
    finished = _complete(kueue, JobState(status=JobStatus.SUCCEEDED))
    assert (finished.status, finished.preemptions) == (JobStatus.SUCCEEDED, 1)
    assert kueue.deactivated == []


def test_preemptions_past_the_budget_end_the_job_and_keep_kueue_from_running_it_again() -> None:
    kueue = Kueue(Queued("wl", PLACE, 2, "Preempted to accommodate a workload"))
    state = _complete(kueue, JobState(status=JobStatus.PENDING), _record(retries=1))
    assert (state.status, state.cause) == (JobStatus.FAILED, FailureCause.PREEMPTED)
    assert "preempted by its queue 2 times, more than its preemption_retries (1)" in state.detail
    assert kueue.deactivated == ["wl"]


def test_jobs_outside_any_queue_cost_no_read_of_kueue() -> None:
    kueue = Kueue(Queued("wl", PLACE, 0, ""))
    seen = [(_record(), _job(labelled=False), JobState(status=JobStatus.RUNNING))]
    assert queued_states(kueue, seen, "Job") == {}  # type: ignore[arg-type]
    assert kueue.asked == 0


def test_amounts_in_a_place_in_line_read_in_plain_digits() -> None:
    from decimal import Decimal

    from kinetic_gke.queueing.kueue_view import _shown

    assert _shown("memory", Decimal(10000 * (1 << 30))) == "10000Gi"
    assert _shown("memory", Decimal(3 * (1 << 29))) == "1.5Gi"
    assert _shown("cpu", Decimal("5000")) == "5000"
    assert _shown("cpu", Decimal("0.5")) == "0.5"
    assert _shown("google.com/tpu", Decimal(16)) == "16"
