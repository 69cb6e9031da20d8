"""A JobSet's state from it and its pods: every host counts, a failing host names itself, a
group the cluster interrupted says which run it is on, and only the current run's pods count."""

from datetime import UTC, datetime, timedelta
from typing import Any

from kinetic_gke.jobset_status import host_of, jobset_state, refusing_jobs
from kinetic_protocol import FailureCause, JobStatus

Obj = dict[str, Any]
NOW = datetime(2026, 11, 28, 12, 0, tzinfo=UTC)
WAIT = 600.0


def _jobset(
    *,
    slices: int = 1,
    per_slice: int = 2,
    restarts: int = 0,
    conditions: list[Obj] | None = None,
    suspend: bool = False,
) -> Obj:
    return {
        "metadata": {"name": "js", "creationTimestamp": _ago(60)},
        "spec": {
            "suspend": suspend,
            "replicatedJobs": [
                {
                    "name": "node",
                    "replicas": slices,
                    "template": {"spec": {"parallelism": per_slice}},
                }
            ],
            "failurePolicy": {"maxRestarts": 3},
        },
        "status": {"restarts": restarts, "conditions": conditions or []},
    }


def _ago(seconds: float) -> str:
    return (NOW - timedelta(seconds=seconds)).isoformat().replace("+00:00", "Z")


def _pod(
    host: int,
    phase: str,
    *,
    slice_index: int = 0,
    restart: int = 0,
    code: int | None = None,
    finished: float = 0,
    conditions: list[Obj] | None = None,
    deadline: int | None = None,
) -> Obj:
    status: Obj = {"phase": phase, "conditions": conditions or []}
    if code is not None:
        terminated = {"exitCode": code, "reason": "Error", "finishedAt": _ago(finished)}
        status["containerStatuses"] = [{"name": "kinetic", "state": {"terminated": terminated}}]
    elif phase == "Running":
        status["containerStatuses"] = [{"name": "kinetic", "state": {"running": {}}}]
    spec: Obj = {"nodeName": "n"}
    if deadline is not None:
        spec["activeDeadlineSeconds"] = deadline
    return {
        "metadata": {
            "name": f"js-node-{slice_index}-{host}-x",
            "uid": f"u{slice_index}{host}{restart}",
            "creationTimestamp": _ago(30),
            "labels": {
                "jobset.sigs.k8s.io/job-global-index": str(slice_index),
                "batch.kubernetes.io/job-completion-index": str(host),
                "jobset.sigs.k8s.io/restart-attempt": str(restart),
            },
        },
        "spec": spec,
        "status": status,
    }


def _state(jobset: Obj | None, pods: list[Obj]) -> Any:
    return jobset_state(jobset, pods, unschedulable_timeout=WAIT, now=NOW)


def _condition(kind: str, reason: str = "", message: str = "") -> Obj:
    return {"type": kind, "status": "True", "reason": reason, "message": message}


DISRUPTED = [{"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler"}]


def test_the_job_succeeds_when_jobset_says_every_job_completed() -> None:
    state = _state(_jobset(conditions=[_condition("Completed", "AllJobsCompleted")]), [])
    assert state.status is JobStatus.SUCCEEDED


def test_a_group_waiting_in_its_queue_is_pending_whatever_the_wait() -> None:
    state = _state(_jobset(suspend=True), [])
    assert (state.status, state.detail) == (
        JobStatus.PENDING,
        "waiting to be admitted by its queue",
    )


def test_the_job_runs_once_every_host_runs_and_says_which_run_of_the_group_it_is() -> None:
    pods = [_pod(0, "Running"), _pod(1, "Pending")]
    assert _state(_jobset(), pods).status is JobStatus.PENDING
    running = _state(_jobset(), [_pod(0, "Running"), _pod(1, "Running")])
    assert (running.status, running.preemptions) == (JobStatus.RUNNING, 0)
    again = [_pod(0, "Running", restart=1), _pod(1, "Running", restart=1)]
    restarted = _state(_jobset(restarts=1), again)
    assert restarted.status is JobStatus.RUNNING
    assert "attempt 2 of 4" in restarted.detail
    assert restarted.preemptions == 1


def test_a_host_that_fails_fails_the_job_at_once_and_names_itself() -> None:
    state = _state(_jobset(), [_pod(0, "Running"), _pod(1, "Failed", code=1)])
    assert (state.status, state.cause, state.exit_code) == (JobStatus.FAILED, FailureCause.EXIT, 1)
    assert state.failed_host == 1
    assert state.detail.startswith("host 1 of 2: exit 1")


def test_the_failed_groups_cause_is_the_host_that_failed_on_its_own_not_one_stopped_with_it() -> (
    None
):
    """The job controller stops a failed Job's other pods (143): they may end first."""
    pods = [_pod(0, "Failed", code=143, finished=20), _pod(1, "Failed", code=1, finished=10)]
    failed = _condition("Failed", "FailJobSetFailurePolicyAction", "(first failed job: js-node-0)")
    state = _state(_jobset(conditions=[failed]), pods)
    assert (state.status, state.failed_host, state.exit_code) == (JobStatus.FAILED, 1, 1)


def test_a_host_taken_away_with_restarts_left_is_the_group_starting_again() -> None:
    pods = [_pod(0, "Running"), _pod(1, "Failed", code=143, conditions=DISRUPTED)]
    state = _state(_jobset(), pods)
    assert state.status is JobStatus.PENDING
    assert state.detail.startswith("host 1 of 2: preempted by the scheduler")
    assert "runs the group again (attempt 2 of 4)" in state.detail
    # With no deadline of its own, a host that ended as stopped was taken away too (Kueue).
    stopped = _state(_jobset(), [_pod(0, "Running"), _pod(1, "Failed", code=143)])
    assert stopped.status is JobStatus.PENDING
    timed = _state(_jobset(), [_pod(0, "Running"), _pod(1, "Failed", code=143, deadline=60)])
    assert timed.status is JobStatus.FAILED
    # Readmitted by Kueue after its preemption, a host finds its run started in another pod.
    readmitted = [_pod(0, "Failed", code=3, deadline=60), _pod(1, "Failed", code=3, deadline=60)]
    again = _state(_jobset(), readmitted)
    assert again.status is JobStatus.PENDING
    assert "runs the group again (attempt 2 of 4)" in again.detail


def test_a_group_preempted_more_than_its_restarts_fails_as_preempted() -> None:
    failed = _condition("Failed", "ReachedMaxRestarts", "jobset failed due to reaching max")
    pods = [_pod(1, "Failed", code=143, conditions=DISRUPTED, restart=3)]
    state = _state(_jobset(restarts=3, conditions=[failed]), pods)
    assert (state.status, state.cause, state.failed_host) == (
        JobStatus.FAILED,
        FailureCause.PREEMPTED,
        1,
    )
    assert state.preemptions == 3
    podless = _state(_jobset(restarts=3, conditions=[failed]), [])
    assert (podless.status, podless.cause) == (JobStatus.FAILED, FailureCause.PREEMPTED)
    assert "ReachedMaxRestarts" in podless.detail


def test_only_the_pods_of_the_groups_current_run_count() -> None:
    pods = [
        _pod(1, "Failed", code=143, conditions=DISRUPTED, restart=0),
        _pod(0, "Running", restart=1),
        _pod(1, "Running", restart=1),
    ]
    assert _state(_jobset(restarts=1), pods).status is JobStatus.RUNNING
    # The last run's failed pod, still there while the new run's host 1 has none yet.
    state = _state(_jobset(restarts=1), pods[:2])
    assert state.detail == "waiting for the group's 1 more pods (attempt 2 of 4)"


def test_a_group_whose_pods_do_not_come_fails_past_the_wait_from_its_admission() -> None:
    waiting = _state(_jobset(), [_pod(0, "Running")])
    assert (waiting.status, waiting.detail) == (
        JobStatus.PENDING,
        "waiting for the group's 1 more pods",
    )
    admitted_long_ago = _jobset()
    admitted_long_ago["metadata"]["creationTimestamp"] = _ago(WAIT + 60)
    assert _state(admitted_long_ago, []).cause is FailureCause.UNSCHEDULABLE
    # A set that waited in its queue counts from its resumption, not its creation.
    resumed = {"type": "Suspended", "status": "False", "lastTransitionTime": _ago(5)}
    admitted_long_ago["status"]["conditions"] = [resumed]
    assert _state(admitted_long_ago, []).status is JobStatus.PENDING


def _refused(message: str, first_ago: float, last_ago: float = 1) -> Obj:
    """A ``FailedCreate`` event of the job controller on one of the set's Jobs."""
    return {
        "reason": "FailedCreate",
        "type": "Warning",
        "message": message,
        "involvedObject": {"kind": "Job", "name": "js-node-0"},
        "firstTimestamp": _ago(first_ago),
        "lastTimestamp": _ago(last_ago),
    }


def test_a_group_whose_pods_the_cluster_refuses_says_why_then_fails_past_the_wait() -> None:
    """Quota for one pod of two: host 1's pod is refused, which the Job's events say, and
    the wait counts from the first refusal."""
    jobset = _jobset()
    running = [_pod(0, "Running")]
    assert refusing_jobs(jobset, running) == ["js-node-0"]
    quota = 'Error creating: pods "js-node-0-1-x" is forbidden: exceeded quota: q, pods=1'
    events = [_refused(quota, 30)]
    pending = jobset_state(jobset, running, events=events, unschedulable_timeout=WAIT, now=NOW)
    assert (pending.status, pending.detail) == (JobStatus.PENDING, f"FailedCreate: {quota}")
    events.append(_refused(quota, WAIT + 5))
    failed = jobset_state(jobset, running, events=events, unschedulable_timeout=WAIT, now=NOW)
    assert failed.status is JobStatus.FAILED
    assert failed.detail.startswith(f"FailedCreate: {quota} (for "), failed.detail


def test_jobsets_own_wait_for_the_first_host_is_not_read_as_a_refusal() -> None:
    """Exclusive placement: JobSet's webhook refuses a follower until the leader has a node;
    the Job makes it again then, so the group is waiting, not refused."""
    gate = 'admission webhook "vpod.kb.io" denied the request: follower pod node selector not set'
    state = jobset_state(
        _jobset(),
        [_pod(0, "Running")],
        events=[_refused(gate, 2)],
        unschedulable_timeout=WAIT,
        now=NOW,
    )
    assert (state.status, state.detail) == (
        JobStatus.PENDING,
        "waiting for the group's 1 more pods",
    )


def test_only_a_group_short_of_pods_out_of_its_queue_reads_its_jobs_refusals() -> None:
    every_host = [_pod(h, "Running", slice_index=s) for s in range(2) for h in range(2)]
    assert refusing_jobs(_jobset(slices=2), every_host) == []
    assert refusing_jobs(_jobset(slices=2), every_host[:3]) == ["js-node-0", "js-node-1"]
    assert refusing_jobs(_jobset(suspend=True), []) == []


def test_a_deleted_or_missing_set_is_not_found() -> None:
    assert _state(None, []).status is JobStatus.NOT_FOUND
    going = _jobset()
    going["metadata"]["deletionTimestamp"] = _ago(1)
    assert _state(going, []).status is JobStatus.NOT_FOUND


def test_hosts_are_numbered_slice_by_slice() -> None:
    assert host_of(_pod(2, "Running", slice_index=1), per_slice=4) == 6
    pods = [_pod(h, "Running", slice_index=s) for s in range(2) for h in range(2)]
    pods[3] = _pod(1, "Failed", slice_index=1, code=1)
    state = _state(_jobset(slices=2), pods)
    assert (state.failed_host, state.detail.split(":")[0]) == (3, "host 3 of 4")
