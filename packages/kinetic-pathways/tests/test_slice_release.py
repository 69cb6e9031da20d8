"""A slice that stops itself records what the pathways backend reads, as a polling client would."""

from typing import Any

import pytest

from kinetic_pathways import status
from kinetic_runtime import release
from kinetic_runtime.multihost import SliceHost


def test_the_runtime_and_the_backend_agree_on_the_recorded_names() -> None:
    assert release.FINAL_STATE == status.FINAL_STATE
    assert release.FINAL_DETAIL == status.FINAL_DETAIL
    assert release.FINAL_EXIT_CODE == status.FINAL_EXIT_CODE
    assert release.log_tail_key(3) == status.log_tail_key(3)
    assert (release.LOG_TAIL_LINES, release.LOG_TAIL_BYTES) == (
        status.LOG_TAIL_LINES,
        status.LOG_TAIL_BYTES,
    )
    assert release.WORKER_INDEX == status.WORKER_INDEX


def _pod(host: int, terminated: dict[str, object] | None) -> dict[str, object]:
    state = {"terminated": terminated} if terminated is not None else {"running": {}}
    return {
        "metadata": {
            "name": f"s-0-{host}",
            "uid": f"u{host}",
            "creationTimestamp": "2026-01-01T00:00:00Z",
            "labels": {status.WORKER_INDEX: str(host)},
        },
        "status": {"phase": "Running", "containerStatuses": [{"state": state}]},
    }


@pytest.mark.parametrize(
    "ends",
    [
        [{"exitCode": 0}, {"exitCode": 0}, {"exitCode": 0}],
        [{"exitCode": 0}, {"exitCode": 137, "reason": "OOMKilled"}, None],
        [None, {"exitCode": 3, "reason": "Error"}, {"exitCode": 1, "reason": "Error"}],
    ],
)
def test_the_slice_reads_the_outcome_a_polling_client_would(
    ends: list[dict[str, object] | None],
) -> None:
    pods = [_pod(host, end) for host, end in enumerate(ends)]
    lws = {"metadata": {"name": "s"}, "spec": {"leaderWorkerTemplate": {"size": 3}}}
    seen = status.slice_state(lws, pods, events=[], unschedulable_timeout=60)
    assert release._outcome(3, release._newest(pods)) == seen.status.value


def test_the_slice_waits_while_a_host_runs() -> None:
    pods = [_pod(0, {"exitCode": 0}), _pod(1, None)]
    assert release._outcome(2, release._newest(pods)) is None


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
    assert api.stopped is not None and api.stopped[release.FINAL_STATE] == "SUCCEEDED"
    assert api.stopped[release.log_tail_key(1)] == "output of s-0-1\n"
