"""A flex-start job's ProvisioningRequest, as its status reads it.

Kueue's provisioning admission check makes one ProvisioningRequest per attempt of a workload
(owned by the Workload, named ``<workload>-<check>-<attempt>``) and admits the workload once
GKE's autoscaler sets it ``Provisioned``. Until then the job's Workload says only that it waits
for its check, and once the request fails Kueue deactivates the Workload and clears its check:
the request itself keeps what happened and GKE's words for it, so the status is read there.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime

from kinetic_gke.k8s import Obj
from kinetic_protocol import FailureCause, JobState, JobStatus

__all__ = ["PROVISIONING_API", "FlexRequest", "flex_requests", "flex_state", "waits_on_a_check"]

PROVISIONING_API = "/apis/autoscaling.x-k8s.io/v1"
_ENDED = {"Failed": "failed", "CapacityRevoked": "had its capacity revoked"}


@dataclass(frozen=True)
class FlexRequest:
    """One ProvisioningRequest: its name, where it stands, GKE's message, and since when."""

    name: str
    state: str
    """``Provisioned``, ``Failed``, ``CapacityRevoked``, ``Accepted``, or empty (sent)."""
    message: str
    since: datetime

    def describe(self, now: datetime) -> str:
        """The waiting detail: ``waiting for capacity: flex-start request R accepted, not
        provisioned yet (for 4m)``."""
        stand = "accepted" if self.state == "Accepted" else "sent, not accepted"
        waited = _duration((now - self.since).total_seconds())
        return (
            f"waiting for capacity: flex-start request {self.name} {stand}, not provisioned yet "
            f"(for {waited})"
        )


def waits_on_a_check(workload: Obj) -> bool:
    """Whether a Workload has an admission check, or was sent back by one: only then may a
    ProvisioningRequest of it exist."""
    status = workload.get("status") or {}
    if status.get("admissionChecks"):
        return True
    evictions = (status.get("schedulingStats") or {}).get("evictions") or []
    return any(e.get("underlyingCause") == "AdmissionCheck" for e in evictions)


def flex_requests(listing: Iterable[Obj]) -> dict[str, FlexRequest]:
    """The latest ProvisioningRequest of each Workload, by the Workload's name."""
    latest: dict[str, Obj] = {}
    for request in listing:
        for owner in request["metadata"].get("ownerReferences") or []:
            if owner.get("kind") != "Workload":
                continue
            seen = latest.get(owner["name"])
            stamp = request["metadata"].get("creationTimestamp", "")
            if seen is None or stamp >= seen["metadata"].get("creationTimestamp", ""):
                latest[owner["name"]] = request
    return {workload: _read(request) for workload, request in latest.items()}


def _read(request: Obj) -> FlexRequest:
    conditions = {
        c.get("type"): c
        for c in (request.get("status") or {}).get("conditions") or []
        if c.get("status") == "True"
    }
    for state in ("CapacityRevoked", "Failed", "Provisioned", "Accepted"):
        if state in conditions:
            found = conditions[state]
            return FlexRequest(
                request["metadata"]["name"],
                state,
                str(found.get("message") or found.get("reason") or ""),
                _time(found.get("lastTransitionTime")),
            )
    created = _time(request["metadata"].get("creationTimestamp"))
    return FlexRequest(request["metadata"]["name"], "", "", created)


def flex_state(request: FlexRequest, state: JobState, now: datetime) -> JobState | None:
    """The state a job not ended yet has because of its request: FAILED (``unschedulable``,
    with GKE's message) once the request failed or its capacity was revoked, PENDING with the
    wait while it is not provisioned; None once provisioned (the job's own state holds)."""
    ended = _ENDED.get(request.state)
    if ended is not None:
        return JobState(
            status=JobStatus.FAILED,
            detail=f"flex-start request {request.name} {ended}: {request.message}",
            cause=FailureCause.UNSCHEDULABLE,
            preemptions=state.preemptions,
        )
    if request.state == "Provisioned" or state.status is not JobStatus.PENDING:
        return None
    return JobState(
        status=JobStatus.PENDING, detail=request.describe(now), preemptions=state.preemptions
    )


def _time(stamp: object) -> datetime:
    if not isinstance(stamp, str) or not stamp:
        return datetime.now(UTC)
    return datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)


def _duration(seconds: float) -> str:
    """``45s``, ``4m``, ``2h 5m``."""
    whole = max(int(seconds), 0)
    if whole < 60:
        return f"{whole}s"
    if whole < 3600:
        return f"{whole // 60}m"
    return f"{whole // 3600}h {whole % 3600 // 60}m"
