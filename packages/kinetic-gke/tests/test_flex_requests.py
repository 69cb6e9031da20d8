"""A flex-start job's ProvisioningRequests as its status reads them (a unit test of the
reading; the real Kueue and its requests are in tests/scenarios/test_flex_start.py)."""

from datetime import UTC, datetime
from typing import Any

from kinetic_gke.queueing.provisioning import flex_requests, flex_state, waits_on_a_check
from kinetic_protocol import JobState, JobStatus

NOW = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)


def _request(name: str, created: str, *conditions: tuple[str, str]) -> dict[str, Any]:
    return {
        "metadata": {
            "name": name,
            "creationTimestamp": created,
            "ownerReferences": [{"kind": "Workload", "name": "wl"}],
        },
        "status": {
            "conditions": [
                {
                    "type": kind,
                    "status": "True",
                    "message": f"{kind} says so",
                    "lastTransitionTime": stamp,
                }
                for kind, stamp in conditions
            ]
        },
    }


def test_the_latest_attempt_counts_and_its_wait_is_told_in_minutes() -> None:
    found = flex_requests([
        _request("wl-check-2", "2026-01-01T11:50:00Z", ("Accepted", "2026-01-01T11:55:30Z")),
        _request("wl-check-1", "2026-01-01T11:00:00Z", ("Failed", "2026-01-01T11:10:00Z")),
    ])  # fmt: skip
    request = found["wl"]
    waiting = flex_state(request, JobState(status=JobStatus.PENDING), NOW)
    assert waiting is not None and waiting.detail == (
        "waiting for capacity: flex-start request wl-check-2 accepted, not provisioned yet (for 4m)"
    )
    sent = flex_requests([_request("wl-check-1", "2026-01-01T09:45:00Z")])["wl"]
    shown = flex_state(sent, JobState(status=JobStatus.PENDING), NOW)
    assert shown is not None and shown.detail.endswith("sent, not accepted, not provisioned yet "
                                                       "(for 2h 15m)")  # fmt: skip


def test_a_provisioned_request_leaves_the_jobs_own_state() -> None:
    provisioned = flex_requests([
        _request("r", "2026-01-01T11:00:00Z", ("Accepted", "2026-01-01T11:00:01Z"),
                 ("Provisioned", "2026-01-01T11:00:02Z")),
    ])["wl"]  # fmt: skip
    assert flex_state(provisioned, JobState(status=JobStatus.RUNNING), NOW) is None
    assert flex_state(provisioned, JobState(status=JobStatus.PENDING), NOW) is None


def test_only_a_workload_with_a_check_or_sent_back_by_one_is_looked_up() -> None:
    assert not waits_on_a_check({"status": {}})
    assert waits_on_a_check({"status": {"admissionChecks": [{"name": "kinetic-flex-start"}]}})
    sent_back = {"schedulingStats": {"evictions": [{"underlyingCause": "AdmissionCheck"}]}}
    assert waits_on_a_check({"status": sent_back})
