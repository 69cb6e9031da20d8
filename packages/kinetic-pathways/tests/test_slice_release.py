"""A slice that stops itself records what the pathways backend reads, as a polling client would."""

import pytest

from kinetic_pathways import status
from kinetic_runtime import release


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
