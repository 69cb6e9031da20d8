"""The tally behind ``max_cost``: an attempt counts from its start to its stored result at the
price of what it was placed on, a running one until now, and one killed with no result until
it was seen ended (issue 52). Jobs here are stand-ins with a record and a stored result; the
meter at work on the real control plane is in ``tests/scenarios/test_capacity.py``."""

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import msgspec
import pytest

from kinetic.batch import spending
from kinetic.batch.spending import SpendingMeter
from kinetic_protocol import (
    BatchManifest,
    JobRecord,
    JobState,
    JobStatus,
    ObjectNotFoundError,
    Succeeded,
)
from kinetic_protocol.capacity import Placement
from kinetic_testing.records import job_record

T0 = datetime(2026, 11, 28, 12, 0, tzinfo=UTC)
L4_SPOT = Placement(accelerator="gpu-l4-x2", capacity="spot")


def _manifest() -> BatchManifest:
    template = job_record(
        backend="gke",
        project="p",
        cluster_name="c",
        zone="z",
        namespace="n",
        bucket_name="b",
        accelerator="gpu-l4-x2",
        display_name="f",
        created_at=T0.isoformat(),
        capacity=["spot", "on-demand"],
    )
    return BatchManifest(
        group_id="grp-1",
        func_name="f",
        total_expected=3,
        job_id_prefix="f-1",
        job_template=template,
        created_at=T0.isoformat(),
    )


@dataclass
class _Job:
    job_id: str
    envelope: Any = None

    @property
    def record(self) -> JobRecord:
        return msgspec.structs.replace(_manifest().job_template, job_id=self.job_id)

    def read_envelope(self) -> Any:
        if self.envelope is None:
            raise ObjectNotFoundError(f"no result of {self.job_id}")
        return self.envelope


@pytest.fixture
def meter(monkeypatch: pytest.MonkeyPatch) -> SpendingMeter:
    starts = {"a": T0, "b": T0, "c": None}
    monkeypatch.setattr(spending, "start_claim_time", lambda record: starts[record.job_id])
    return SpendingMeter(_manifest(), cap=10.0)


def _state(status: JobStatus) -> JobState:
    return JobState(status=status, placement=L4_SPOT)


def test_a_settled_attempt_costs_its_stored_run_at_its_placements_price(
    meter: SpendingMeter,
) -> None:
    hour_later = (T0 + timedelta(hours=1)).isoformat()
    done = _Job(
        "a", Succeeded(job_id="a", value=b"", started_at=T0.isoformat(), finished_at=hour_later)
    )
    meter.observe(done, _state(JobStatus.RUNNING))
    meter.observe(done, _state(JobStatus.SUCCEEDED))
    spot = meter.pricing.hourly[next(c for c in meter.pricing.choices if c.capacity == "spot")]
    assert meter.settled == pytest.approx(spot), "two L4s on spot for one hour"
    assert meter.spent(T0 + timedelta(hours=5)) == pytest.approx(spot), "no clock left running"


def test_a_running_attempt_counts_until_now_and_reaches_the_cap(meter: SpendingMeter) -> None:
    meter.observe(_Job("b"), _state(JobStatus.RUNNING))
    hourly = meter.pricing.hourly_of(L4_SPOT)
    assert hourly
    hours_to_cap = 10.0 / hourly
    assert meter.spent(T0 + timedelta(hours=hours_to_cap / 2)) < meter.cap
    assert meter.spent(T0 + timedelta(hours=hours_to_cap * 1.01)) >= meter.cap


def test_an_attempt_killed_with_no_result_counts_until_it_was_seen_ended(
    meter: SpendingMeter,
) -> None:
    killed = _Job("b")
    meter.observe(killed, _state(JobStatus.RUNNING))
    meter.observe(killed, _state(JobStatus.FAILED))
    assert meter.settled > 0 and not meter.running
    never_started = _Job("c")  # no start claim, no result: nothing known ran
    meter.observe(never_started, _state(JobStatus.FAILED))
    assert meter.running == {}
