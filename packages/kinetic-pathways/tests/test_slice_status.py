"""How a LeaderWorkerSet and its hosts' pods map to one job state (pure; no cluster)."""

from datetime import UTC, datetime
from typing import Any

import pytest

from kinetic_pathways.status import (
    FINAL_CAUSE,
    FINAL_DETAIL,
    FINAL_STATE,
    HOST_PODS,
    WORKER_INDEX,
    host_pods,
    slice_state,
)
from kinetic_protocol import FailureCause, JobStatus

NOW = datetime(2026, 11, 24, 12, 0, tzinfo=UTC)
Obj = dict[str, Any]


def lws(size: int = 4, **annotations: str) -> Obj:
    return {
        "metadata": {"name": "job", "uid": "u1", "annotations": annotations},
        "spec": {"replicas": 1, "leaderWorkerTemplate": {"size": size}},
    }


def pod(
    host: int, *, state: Obj | None = None, last: Obj | None = None, uid: str = "", **status: Any
) -> Obj:
    container = {"name": "kinetic", "state": state or {"running": {}}, "lastState": last or {}}
    return {
        "metadata": {
            "uid": uid or f"uid-{host}",
            "name": f"job-0-{host}" if host else "job-0",
            "labels": {WORKER_INDEX: str(host)},
            "creationTimestamp": "2026-11-24T11:59:00Z",
        },
        "spec": {"nodeName": f"node-{host}"},
        "status": {"phase": "Running", "containerStatuses": [container], **status},
    }


def ended(code: int, reason: str = "") -> Obj:
    return {
        "terminated": {"exitCode": code, "reason": reason or ("Completed" if not code else "Error")}
    }


def state(obj: Obj | None, pods: list[Obj]):
    return slice_state(obj, pods, events=[], unschedulable_timeout=900, now=NOW)


def test_a_worker_killed_while_the_leader_runs_fails_the_job_naming_the_host() -> None:
    pods = [pod(0), pod(1), pod(2), pod(3, last=ended(137, "OOMKilled"))]
    got = state(lws(), pods)
    assert got.status is JobStatus.FAILED
    assert got.detail == "host 3 of 4: OOMKilled, exit 137"
    assert got.exit_code == 137
    assert got.cause is FailureCause.OOM


def test_the_lowest_failed_host_is_named() -> None:
    pods = [pod(0), pod(1, last=ended(1)), pod(2, state=ended(137, "OOMKilled")), pod(3)]
    got = state(lws(), pods)
    assert (got.detail, got.cause) == ("host 1 of 4: exit 1", FailureCause.EXIT)


def test_a_leader_success_does_not_hide_a_failed_worker() -> None:
    pods = [pod(0, last=ended(0)), pod(1, last=ended(2))]
    got = state(lws(2), pods)
    assert (got.status, got.detail) == (JobStatus.FAILED, "host 1 of 2: exit 2")


def test_every_host_must_succeed() -> None:
    assert state(lws(2), [pod(0, last=ended(0)), pod(1)]).status is JobStatus.RUNNING
    both = [pod(0, last=ended(0)), pod(1, state=ended(0))]
    assert state(lws(2), both).status is JobStatus.SUCCEEDED


def test_a_replaced_pod_is_a_failure_of_its_host() -> None:
    got = state(lws(2), [pod(0), pod(1, last=ended(3))])
    assert got.status is JobStatus.FAILED
    assert got.detail.startswith("host 1 of 2: its pod was replaced")
    assert got.cause is FailureCause.PREEMPTED


def test_an_evicted_worker_pod_fails_the_job() -> None:
    evicted = pod(1, state={"running": {}}, phase="Failed", reason="Evicted", message="low memory")
    evicted["status"]["containerStatuses"] = []
    got = state(lws(2), [pod(0), evicted])
    assert got.status is JobStatus.FAILED
    assert got.detail.startswith("host 1 of 2: evicted")
    assert got.cause is FailureCause.PREEMPTED


def test_an_image_that_cannot_be_pulled_on_any_host_fails_the_job() -> None:
    waiting = {"waiting": {"reason": "ImagePullBackOff", "message": "no such image"}}
    got = state(lws(2), [pod(0), pod(1, state=waiting, phase="Pending")])
    assert got.status is JobStatus.FAILED
    assert got.detail == "host 1 of 2: ImagePullBackOff: no such image"
    assert got.cause is FailureCause.IMAGE


def test_a_host_that_ended_its_run_at_the_timeout_is_a_timeout() -> None:
    """The runtime's exit status 4 (``KINETIC_ATTEMPT_TIMEOUT``), on any host."""
    got = state(lws(2), [pod(0, last=ended(4)), pod(1, last=ended(4))])
    assert (got.status, got.cause, got.exit_code) == (JobStatus.FAILED, FailureCause.TIMEOUT, 4)
    assert got.detail == "host 0 of 2: ran past its timeout, exit 4"


def test_missing_hosts_keep_the_job_pending() -> None:
    got = state(lws(4), [pod(0), pod(1)])
    assert (got.status, got.detail) == (JobStatus.PENDING, "host 2 of 4: waiting for its pod")


def test_a_recorded_outcome_wins_over_pods_and_their_absence() -> None:
    stopped = lws(
        2,
        **{
            FINAL_STATE: "FAILED",
            FINAL_DETAIL: "host 1 of 2: OOMKilled, exit 137",
            FINAL_CAUSE: "oom",
        },
    )
    got = state(stopped, [])
    assert (got.status, got.detail) == (JobStatus.FAILED, "host 1 of 2: OOMKilled, exit 137")
    assert got.cause is FailureCause.OOM
    unknown = lws(2, **{FINAL_STATE: "FAILED", FINAL_CAUSE: "a-cause-of-a-newer-kinetic"})
    assert state(unknown, []).cause is None


@pytest.mark.parametrize("obj", [None, {**lws(), "metadata": {"deletionTimestamp": "x"}}])
def test_a_missing_or_deleting_set_is_not_found(obj: Obj | None) -> None:
    assert state(obj, []).status is JobStatus.NOT_FOUND


def test_a_host_whose_pod_was_replaced_after_all_ran_fails_at_once() -> None:
    """The replacement waits for a node (its VM is gone): it is not a pending host."""
    running = [pod(0), pod(1)]
    recorded = lws(2, **{HOST_PODS: ",".join(host_pods(running))})
    assert state(recorded, running).status is JobStatus.RUNNING
    waiting = pod(1, uid="uid-new", state={"waiting": {"reason": "ContainerCreating"}})
    got = state(recorded, [pod(0), {**waiting, "spec": {}}])
    assert got.status is JobStatus.FAILED
    assert got.detail.startswith("host 1 of 2: its pod was replaced")
    assert got.cause is FailureCause.PREEMPTED
    assert state(recorded, [pod(0)]).detail.startswith("host 1 of 2: its pod was replaced")


def test_a_slice_s_hosts_are_read_from_pods_as_the_gke_poll_lists_them() -> None:
    """The gke backend lists a poll's pods for their state alone; a slice's settling reads
    each host's pod uid from that same listing."""
    import json

    from kinetic_gke.k8s.pod_states import decode_pod_list

    pods = [pod(host) for host in (1, 0, 2)]
    listed = decode_pod_list(json.dumps({"kind": "PodList", "items": pods}).encode())
    assert host_pods(listed) == host_pods(pods) == ["uid-0", "uid-1", "uid-2"]
