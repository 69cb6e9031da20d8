"""A slice that stops itself records what the pathways backend reads, as a polling client would."""

from typing import Any

import pytest

from kinetic_pathways import status
from kinetic_protocol import JobState
from kinetic_protocol.slices import FINAL_STATE, final_annotations, log_tail_key, newest_by_host
from kinetic_runtime import release, slice_outcome
from kinetic_runtime.multihost import SliceHost

Obj = dict[str, Any]


def _pod(host: int, end: Obj | None, *, first: bool = False, **status_fields: Any) -> Obj:
    """Host ``host``'s pod: running, or restarted after a first run that ended ``end``
    (``first``: that run's container not restarted yet)."""
    if end is None:
        container: Obj = {"state": {"running": {}}}
    elif first:
        container = {"state": {"terminated": end}}
    else:
        container = {"state": {"running": {}}, "lastState": {"terminated": end}}
    return {
        "metadata": {
            "name": f"s-0-{host}",
            "uid": f"u{host}",
            "creationTimestamp": "2026-01-01T00:00:00Z",
            "labels": {status.WORKER_INDEX: str(host)},
        },
        "status": {"phase": "Running", "containerStatuses": [container], **status_fields},
    }


def _lws(size: int, **annotations: str) -> Obj:
    return {
        "metadata": {"name": "s", "annotations": annotations},
        "spec": {"leaderWorkerTemplate": {"size": size}},
    }


def _as_state(outcome: JobState) -> JobState:
    """The runtime's outcome as the backend reads it back from the annotations it writes."""
    state = status.recorded_state({"metadata": {"annotations": final_annotations(outcome)}})
    assert state is not None
    return state


OK, RAISED = {"exitCode": 0, "reason": "Completed"}, {"exitCode": 1, "reason": "Error"}
DECIDED = {
    "all succeeded": [_pod(0, OK), _pod(1, OK), _pod(2, OK, first=True)],
    "a worker raised while the leader runs": [_pod(0, None), _pod(1, RAISED), _pod(2, None)],
    "a worker OOM killed": [_pod(0, OK), _pod(1, {"exitCode": 137, "reason": "OOMKilled"})],
    "the lowest failed host": [
        _pod(0, None),
        _pod(1, {"exitCode": 3, "reason": "Error"}),
        _pod(2, RAISED),
    ],
    "past its timeout": [_pod(0, {"exitCode": 4, "reason": "Error"}), _pod(1, None)],
    "the leader failed first": [
        _pod(0, {"exitCode": 2, "reason": "Error"}, first=True),
        _pod(1, None),
    ],
}


@pytest.mark.parametrize("pods", DECIDED.values(), ids=DECIDED.keys())
def test_a_slice_records_the_state_a_polling_client_would(pods: list[Obj]) -> None:
    size = len(pods)
    seen = status.slice_state(_lws(size), pods, events=[], unschedulable_timeout=60)
    outcome = slice_outcome.slice_outcome(size, _lws(size), newest_by_host(pods))
    assert outcome is not None
    assert _as_state(outcome) == seen


def test_a_host_replaced_after_a_client_recorded_the_hosts_fails_as_preempted() -> None:
    pods = [_pod(0, None), _pod(1, None)]
    pods[1]["metadata"]["uid"] = "u1-new"
    recorded = _lws(2, **{status.HOST_PODS: "u0,u1"})
    seen = status.slice_state(recorded, pods, events=[], unschedulable_timeout=60)
    outcome = slice_outcome.slice_outcome(2, recorded, newest_by_host(pods))
    assert outcome is not None and _as_state(outcome) == seen


UNDECIDED = {
    "a host still runs": [_pod(0, OK), _pod(1, None)],
    "a lower host waits for its image": [
        _pod(0, None, phase="Pending"),
        _pod(1, RAISED),
    ],
    "a lower host's pod is gone": [_pod(1, RAISED)],
}


@pytest.mark.parametrize("pods", UNDECIDED.values(), ids=UNDECIDED.keys())
def test_what_only_a_client_can_read_is_left_to_it(pods: list[Obj]) -> None:
    """Undecided here: a client's poll reads the rest (a pending host's scheduling or image)."""
    assert slice_outcome.slice_outcome(2, _lws(2), newest_by_host(pods)) is None


class _LeadersView:
    """The slice as its leader's API calls see it: each listing of its pods the next of
    ``listings`` (the last one again once they run out)."""

    name = "s"

    def __init__(self, listings: list[list[dict[str, object]]]) -> None:
        self.listings, self.listed = listings, 0
        self.stopped: dict[str, str] | None = None

    def slice(self) -> dict[str, object]:
        return {"metadata": {"name": self.name, "resourceVersion": "7", "annotations": {}}}

    def pods(self) -> list[dict[str, object]]:
        self.listed += 1
        return self.listings[min(self.listed, len(self.listings)) - 1]

    def log(self, pod: Any) -> str:
        return f"output of {pod['metadata']['name']}\n"

    def stop(self, lws: dict[str, object], annotations: dict[str, str]) -> bool:
        self.stopped = annotations
        return True


def test_the_leader_does_not_stop_the_slice_while_a_workers_pod_is_missing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every host of the slice counts, not only those with a pod: the worker's pod is made
    after the leader's run has already succeeded."""
    monkeypatch.setattr(release, "_POLL_S", 0)
    leader, worker = _pod(0, {"exitCode": 0}), _pod(1, {"exitCode": 0})
    api = _LeadersView([[leader], [leader, _pod(1, None)], [leader, worker]])
    host = SliceHost(index=0, count=2, coordinator="s-0:8476", instance="s")
    assert release.release_slice(api, host, say=lambda message: None)  # type: ignore[arg-type]
    assert api.listed == 3
    assert api.stopped is not None and api.stopped[FINAL_STATE] == "SUCCEEDED"
    assert api.stopped[log_tail_key(1)] == "output of s-0-1\n"
