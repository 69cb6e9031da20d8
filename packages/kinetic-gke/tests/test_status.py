"""Job + pods -> JobState: every outcome keeps the reason a user needs, and nothing waits
forever in PENDING. The dicts are shaped like what a 1.31 API server returns."""

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from kinetic_gke.status import (
    WAITING_FOR_ADMISSION,
    disrupted,
    job_state,
    needs_pods,
    termination_cause,
)
from kinetic_protocol import FailureCause, JobState, JobStatus

NOW = datetime(2026, 11, 22, 10, 30, tzinfo=UTC)
TIMEOUT = 900.0
IMAGE = "us-docker.pkg.dev/proj/kinetic/gpu:0123456789abcdef"
Obj = dict[str, Any]


def _stamp(seconds_ago: float = 0) -> str:
    return (NOW - timedelta(seconds=seconds_ago)).strftime("%Y-%m-%dT%H:%M:%SZ")


def _cond(
    kind: str, status: str = "True", reason: str = "", message: str = "", ago: float = 0
) -> Obj:
    condition: Obj = {"type": kind, "status": status, "lastTransitionTime": _stamp(ago)}
    if reason:
        condition["reason"] = reason
    if message:
        condition["message"] = message
    return condition


def job(*conditions: Obj, deleting: bool = False, **counts: int) -> Obj:
    """A Job named ``add-1`` whose status has ``counts`` (active, ready, failed, ...)."""
    meta: Obj = {"name": "add-1", "namespace": "default", "labels": {"app": "kinetic"}}
    if deleting:
        meta["deletionTimestamp"] = _stamp()
    status: Obj = {"startTime": _stamp(60), "uncountedTerminatedPods": {}, **counts}
    status.setdefault("ready", 0)
    if conditions:
        status["conditions"] = list(conditions)
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": meta, "status": status}


def pod(
    phase: str,
    state: Obj | None = None,
    *conditions: Obj,
    created_ago: float = 30,
    **status: Any,
) -> Obj:
    """The Job's pod in ``phase``, its container in ``state`` (``{"waiting": {...}}``, ...)."""
    container = {
        "name": "kinetic",
        "image": IMAGE,
        "ready": phase == "Running",
        "restartCount": 0,
        "state": state or {"waiting": {"reason": "ContainerCreating"}},
    }
    return {
        "metadata": {"name": f"add-1-{int(created_ago)}", "creationTimestamp": _stamp(created_ago)},
        "status": {
            "phase": phase,
            "conditions": list(conditions),
            "containerStatuses": [container],
            **status,
        },
    }


def terminated(code: int, reason: str, message: str = "") -> Obj:
    term: Obj = {"exitCode": code, "reason": reason, "startedAt": _stamp(20)}
    if message:
        term["message"] = message
    return {"terminated": term}


def waiting(reason: str, message: str = "") -> Obj:
    return {"waiting": {"reason": reason, **({"message": message} if message else {})}}


def state(job_obj: Obj | None, *pods: Obj) -> JobState:
    return job_state(job_obj, list(pods), unschedulable_timeout=TIMEOUT, now=NOW)


FAILED_JOB = job(_cond("FailureTarget", reason="BackoffLimitExceeded"), failed=1)
FAILED_DONE = job(
    _cond("FailureTarget", reason="BackoffLimitExceeded"),
    _cond("Failed", reason="BackoffLimitExceeded", message="Job has reached the backoff limit"),
    failed=1,
)

# -- absent, finished ----------------------------------------------------------------------


def test_a_missing_or_deleting_job_is_not_found() -> None:
    assert state(None) == JobState(status=JobStatus.NOT_FOUND)
    assert state(job(deleting=True, active=1, ready=1)).status is JobStatus.NOT_FOUND


def test_a_complete_job_succeeded_even_before_its_condition_is_written() -> None:
    complete = job(_cond("SuccessCriteriaMet"), _cond("Complete"), succeeded=1)
    assert state(complete) == JobState(status=JobStatus.SUCCEEDED)
    assert state(job(succeeded=1)).status is JobStatus.SUCCEEDED


def test_a_user_error_fails_with_the_exit_code_and_no_invented_reason() -> None:
    failed = pod("Failed", terminated(1, "Error"))
    result = state(FAILED_DONE, failed)
    assert result == JobState(
        status=JobStatus.FAILED, detail="", exit_code=1, cause=FailureCause.EXIT
    )
    assert result.describe() == "FAILED (exit 1)"


def test_an_oom_kill_says_so_with_exit_137() -> None:
    result = state(FAILED_DONE, pod("Failed", terminated(137, "OOMKilled")))
    assert (result.status, result.detail, result.exit_code) == (JobStatus.FAILED, "OOMKilled", 137)
    assert result.describe() == "FAILED (OOMKilled, exit 137)"
    assert result.cause is FailureCause.OOM


@pytest.mark.parametrize(
    ("reason", "expected"),
    [
        ("TerminationByKubelet", "node shutdown or spot preemption"),
        ("PreemptionByScheduler", "preempted by the scheduler"),
        ("DeletionByTaintManager", "node lost (tainted)"),
        ("DeletionByPodGC", "node lost"),
        ("EvictionByEvictionAPI", "evicted"),
        ("SomethingNewer", "SomethingNewer"),
    ],
)
def test_a_disruption_is_named(reason: str, expected: str) -> None:
    disrupted = pod(
        "Failed",
        terminated(143, "Error"),
        _cond("DisruptionTarget", reason=reason, message="Pod was terminated"),
    )
    result = state(FAILED_DONE, disrupted)
    assert (result.status, result.detail, result.exit_code) == (JobStatus.FAILED, expected, 143)
    assert result.cause is FailureCause.PREEMPTED


def test_a_lost_node_names_the_disruption_and_the_container_state() -> None:
    lost = pod(
        "Failed",
        terminated(137, "ContainerStatusUnknown", "The container could not be located"),
        _cond("DisruptionTarget", reason="DeletionByPodGC", message="PodGC: node no longer exists"),
    )
    result = state(FAILED_DONE, lost)
    assert result.detail == "node lost; ContainerStatusUnknown: The container could not be located"
    assert result.exit_code == 137


def test_a_node_pressure_eviction_quotes_the_kubelet() -> None:
    evicted = pod(
        "Failed",
        terminated(143, "Error"),
        reason="Evicted",
        message="The node was low on resource: memory.",
    )
    result = state(FAILED_DONE, evicted)
    assert result.detail == "evicted: The node was low on resource: memory."
    assert result.cause is FailureCause.PREEMPTED


def test_a_pod_past_its_active_deadline_is_a_timeout() -> None:
    """The kubelet ends a pod past ``activeDeadlineSeconds`` (Kinetic's ``timeout=``)."""
    late = pod(
        "Failed",
        terminated(137, "Error"),
        reason="DeadlineExceeded",
        message="Pod was active on the node longer than the specified deadline",
    )
    result = state(FAILED_DONE, late)
    assert result.cause is FailureCause.TIMEOUT
    assert result.detail == (
        "DeadlineExceeded: Pod was active on the node longer than the specified deadline"
    )
    assert result.exit_code == 137


def test_a_container_that_could_not_start_says_why() -> None:
    broken = pod("Failed", terminated(128, "StartError", 'exec: "python": not found'))
    result = state(FAILED_DONE, broken)
    assert result.detail == 'StartError: exec: "python": not found'
    assert result.exit_code == 128
    assert result.cause is FailureCause.EXIT


def test_a_failure_is_reported_as_soon_as_the_pod_is_counted() -> None:
    """Kubernetes 1.31 writes FailureTarget and ``failed`` first, ``Failed`` later."""
    result = state(FAILED_JOB, pod("Failed", terminated(137, "OOMKilled")))
    assert (result.status, result.detail) == (JobStatus.FAILED, "OOMKilled")


def test_a_failed_job_whose_pod_was_deleted_says_it_lost_its_pod() -> None:
    result = state(FAILED_DONE)
    assert result.status is JobStatus.FAILED
    assert "pod was deleted before it finished" in result.detail
    assert "preempted" in result.detail
    assert result.cause is FailureCause.PREEMPTED


def test_a_job_failing_without_its_pod_says_so_before_the_failed_condition_too() -> None:
    result = state(FAILED_JOB)
    assert result.status is JobStatus.FAILED
    assert "pod was deleted before it finished" in result.detail


def test_a_pod_evicted_before_its_container_started_quotes_the_eviction() -> None:
    evicted = pod("Failed", None, reason="Evicted", message="The node had condition: DiskPressure.")
    evicted["status"]["containerStatuses"] = []
    result = state(FAILED_DONE, evicted)
    assert result == JobState(
        status=JobStatus.FAILED,
        detail="evicted: The node had condition: DiskPressure.",
        cause=FailureCause.PREEMPTED,
    )


def test_a_failed_job_with_another_reason_quotes_it() -> None:
    deadline = job(
        _cond("Failed", reason="DeadlineExceeded", message="Job was active longer than allowed"),
        failed=1,
    )
    assert state(deadline).detail == "DeadlineExceeded: Job was active longer than allowed"


def test_the_newest_pod_explains_the_job() -> None:
    older = pod("Failed", terminated(1, "Error"), created_ago=300)
    newer = pod("Failed", terminated(137, "OOMKilled"), created_ago=10)
    assert state(FAILED_DONE, newer, older).detail == "OOMKilled"
    assert state(FAILED_DONE, older, newer).detail == "OOMKilled"


# -- running, pending --------------------------------------------------------------------------


def test_a_ready_job_is_running_without_looking_at_pods() -> None:
    running = job(active=1, ready=1)
    assert not needs_pods(running)
    assert state(running) == JobState(status=JobStatus.RUNNING)


def test_a_job_without_a_pod_yet_is_pending() -> None:
    fresh = job(active=1)
    assert needs_pods(fresh)
    assert state(fresh) == JobState(status=JobStatus.PENDING, detail="waiting for the Job's pod")


def test_a_starting_container_is_pending_with_its_reason() -> None:
    result = state(job(active=1), pod("Pending", waiting("ContainerCreating")))
    assert result == JobState(status=JobStatus.PENDING, detail="ContainerCreating")


def test_a_running_pod_that_is_not_ready_yet_is_running() -> None:
    running = pod("Running", {"running": {"startedAt": _stamp(5)}})
    assert state(job(active=1), running).status is JobStatus.RUNNING


def test_a_pod_that_failed_before_the_job_noticed_is_failed() -> None:
    result = state(job(active=1), pod("Failed", terminated(137, "OOMKilled")))
    assert (result.status, result.detail, result.exit_code) == (JobStatus.FAILED, "OOMKilled", 137)


@pytest.mark.parametrize(
    ("reason", "message"),
    [
        ("ErrImagePull", f'failed to pull and unpack image "{IMAGE}": not found'),
        ("ImagePullBackOff", f'Back-off pulling image "{IMAGE}"'),
        ("InvalidImageName", f'Failed to apply default image tag "{IMAGE}"'),
    ],
)
def test_an_image_that_cannot_be_pulled_fails_the_job_naming_the_image(
    reason: str, message: str
) -> None:
    stuck = pod("Pending", waiting(reason, message), _cond("PodScheduled"))
    result = state(job(active=1), stuck)
    assert result.status is JobStatus.FAILED
    assert result.detail == f"{reason}: {message}"
    assert IMAGE in result.detail
    assert result.cause is FailureCause.IMAGE


def test_an_unschedulable_pod_is_pending_with_the_schedulers_message_until_the_deadline() -> None:
    message = "0/3 nodes are available: 3 Insufficient nvidia.com/gpu."
    early = pod(
        "Pending",
        None,
        _cond("PodScheduled", "False", "Unschedulable", message, ago=TIMEOUT - 1),
    )
    result = state(job(active=1), early)
    assert result == JobState(status=JobStatus.PENDING, detail=f"Unschedulable: {message}")


def test_an_unschedulable_pod_fails_once_the_deadline_has_passed() -> None:
    message = "0/3 nodes are available: 3 Insufficient nvidia.com/gpu."
    late = pod(
        "Pending",
        None,
        _cond("PodScheduled", "False", "Unschedulable", message, ago=TIMEOUT),
    )
    result = state(job(active=1), late)
    assert result.status is JobStatus.FAILED
    assert result.detail == f"Unschedulable for 900s: {message}"
    assert result.cause is FailureCause.UNSCHEDULABLE


def test_a_pod_on_an_unreachable_node_is_still_running_and_says_so() -> None:
    lost = pod(
        "Unknown",
        {"running": {"startedAt": _stamp(50)}},
        _cond("Ready", "False", "NodeLost", "node is unreachable"),
    )
    result = state(job(active=1), lost)
    assert result == JobState(
        status=JobStatus.RUNNING, detail="pod state unknown: node is unreachable"
    )


def test_a_pod_of_unknown_state_without_a_ready_condition_blames_its_node() -> None:
    lost = pod("Unknown", {"running": {"startedAt": _stamp(50)}})
    assert state(job(active=1), lost).detail == "pod state unknown: its node stopped reporting"


def test_an_unschedulable_condition_without_a_time_is_pending() -> None:
    condition = _cond("PodScheduled", "False", "Unschedulable", "0/1 nodes are available.")
    del condition["lastTransitionTime"]
    result = state(job(active=1), pod("Pending", None, condition))
    assert result == JobState(
        status=JobStatus.PENDING, detail="Unschedulable: 0/1 nodes are available."
    )


def test_pods_are_needed_only_when_the_job_alone_cannot_explain_its_state() -> None:
    assert not needs_pods(job(_cond("Complete"), succeeded=1))
    assert not needs_pods(job(active=1, ready=1))
    assert needs_pods(job(active=1))
    assert needs_pods(FAILED_JOB)
    assert needs_pods(FAILED_DONE)


# -- the job controller's two writes, FailedCreate, pods nobody schedules (real API server) ----


def test_success_criteria_met_is_success_before_the_complete_condition() -> None:
    """The controller's first write: SuccessCriteriaMet, the pod's uid uncounted, ready 0."""
    first_write = job(_cond("SuccessCriteriaMet"), uncountedTerminatedPods={"succeeded": ["u1"]})
    succeeded_pod = pod("Succeeded", terminated(0, "Completed"))
    assert state(first_write, succeeded_pod).status is JobStatus.SUCCEEDED
    assert not needs_pods(first_write)


def test_an_uncounted_succeeded_pod_alone_is_success() -> None:
    only_uncounted = job(uncountedTerminatedPods={"succeeded": ["u1"]})
    assert state(only_uncounted).status is JobStatus.SUCCEEDED


def test_failure_target_is_failure_before_the_failed_condition() -> None:
    first_write = job(
        _cond("FailureTarget", reason="BackoffLimitExceeded"),
        uncountedTerminatedPods={"failed": ["u1"]},
    )
    result = state(first_write, pod("Failed", terminated(3, "Error")))
    assert (result.status, result.exit_code) == (JobStatus.FAILED, 3)


def test_failure_target_alone_is_failure() -> None:
    """The controller's first write when it fails a Job before counting any pod: a Job past
    its ``activeDeadlineSeconds`` whose pod was never created (1.36 job controller: the
    FailureTarget write, then Failed in a second write). Kinetic's own Jobs (backoffLimit 0,
    no deadline) get FailureTarget with their pod's uid in ``uncountedTerminatedPods``
    instead; this keeps the condition meaning failure on its own, as the API defines it."""
    first_write = job(
        _cond(
            "FailureTarget",
            reason="DeadlineExceeded",
            message="Job was active longer than specified deadline",
        ),
        active=0,
        failed=0,
    )
    refused = 'Error creating: pods "add-1-x" is forbidden: exceeded quota: none'
    result = job_state(
        first_write, [], unschedulable_timeout=TIMEOUT, now=NOW, events=[failed_create(refused, 30)]
    )
    assert result == JobState(
        status=JobStatus.FAILED,
        detail="DeadlineExceeded: Job was active longer than specified deadline",
        cause=FailureCause.TIMEOUT,
    )


def test_an_uncounted_failed_pod_alone_is_failure() -> None:
    result = state(
        job(uncountedTerminatedPods={"failed": ["u1"]}), pod("Failed", terminated(3, "Error"))
    )
    assert result.status is JobStatus.FAILED


def test_a_succeeded_pod_is_never_pending() -> None:
    """The pod can be Succeeded while the Job still shows nothing at all."""
    result = state(job(), pod("Succeeded", terminated(0, "Completed"), _cond("PodScheduled")))
    assert result.status is JobStatus.SUCCEEDED


def failed_create(message: str, first_ago: float, last_ago: float = 0) -> Obj:
    return {
        "reason": "FailedCreate",
        "type": "Warning",
        "message": message,
        "involvedObject": {"kind": "Job", "name": "add-1"},
        "firstTimestamp": _stamp(first_ago),
        "lastTimestamp": _stamp(last_ago),
    }


def test_a_job_whose_pod_the_cluster_refuses_is_pending_with_the_reason() -> None:
    refused = 'Error creating: pods "add-1-x" is forbidden: exceeded quota: none, requested: pods=1'
    result = job_state(
        job(), [], unschedulable_timeout=TIMEOUT, now=NOW, events=[failed_create(refused, 30)]
    )
    assert result.status is JobStatus.PENDING
    assert result.detail == f"FailedCreate: {refused}"


def test_a_job_whose_pod_the_cluster_keeps_refusing_fails_after_the_deadline() -> None:
    refused = 'Error creating: pods "add-1-x" is forbidden: error looking up service account'
    events = [failed_create(refused, TIMEOUT + 5, last_ago=3), failed_create(refused, 40)]
    result = job_state(job(), [], unschedulable_timeout=TIMEOUT, now=NOW, events=events)
    assert result.status is JobStatus.FAILED
    assert result.detail.startswith(f"FailedCreate: {refused} (for ")


def test_a_job_with_no_pod_and_no_event_fails_after_the_deadline() -> None:
    stuck = job()
    stuck["metadata"]["creationTimestamp"] = _stamp(TIMEOUT + 1)
    stuck["status"]["startTime"] = _stamp(TIMEOUT + 1)
    result = job_state(stuck, [], unschedulable_timeout=TIMEOUT, now=NOW)
    assert result.status is JobStatus.FAILED
    assert "waiting for the Job's pod" in result.detail


def test_the_deadline_of_a_queued_job_counts_from_its_admission_not_its_creation() -> None:
    admitted = job()  # started (admitted, unsuspended) a minute ago
    admitted["metadata"]["creationTimestamp"] = _stamp(TIMEOUT * 10)
    result = job_state(admitted, [], unschedulable_timeout=TIMEOUT, now=NOW)
    assert result.status is JobStatus.PENDING, result


def test_a_job_its_queue_holds_suspended_is_pending_past_any_deadline() -> None:
    queued = job()
    queued["metadata"]["creationTimestamp"] = _stamp(TIMEOUT * 10)
    del queued["status"]["startTime"]
    queued["spec"] = {"suspend": True}
    result = job_state(queued, [], unschedulable_timeout=TIMEOUT, now=NOW)
    assert result.status is JobStatus.PENDING
    assert result.detail == WAITING_FOR_ADMISSION


def test_a_pod_nobody_schedules_is_pending_then_fails_after_the_deadline() -> None:
    bare = {
        "metadata": {"name": "add-1-a", "creationTimestamp": _stamp(30)},
        "spec": {},
        "status": {"phase": "Pending"},
    }
    assert state(job(), bare) == JobState(status=JobStatus.PENDING, detail="not scheduled yet")
    bare["metadata"]["creationTimestamp"] = _stamp(TIMEOUT + 1)
    assert state(job(), bare).status is JobStatus.FAILED


def test_a_gated_pod_names_its_gates() -> None:
    gated = {
        "metadata": {"name": "add-1-a", "creationTimestamp": _stamp(30)},
        "spec": {"schedulingGates": [{"name": "example.com/quota"}]},
        "status": {"phase": "Pending"},
    }
    assert state(job(), gated).detail == "scheduling gated by example.com/quota"


# -- a preempted pod that Kubernetes runs again ------------------------------------------------

_POLICY = {"podFailurePolicy": {"rules": []}, "backoffLimit": 2}


def _preempted_pod(created_ago: float) -> Obj:
    return pod(
        "Failed",
        terminated(143, "Error"),
        _cond("DisruptionTarget", reason="TerminationByKubelet"),
        created_ago=created_ago,
        reason="Terminated",
    )


def _with_policy(job_obj: Obj) -> Obj:
    return {**job_obj, "spec": dict(_POLICY)}


def test_a_preempted_pod_within_the_budget_is_pending_not_failed() -> None:
    """The Job runs it again in a new pod: reading FAILED here would end the job for a client
    (and be remembered as final) while Kubernetes is still running it."""
    result = state(_with_policy(job(active=0, failed=1)), _preempted_pod(30))
    assert result.status is JobStatus.PENDING
    assert "spot preemption" in result.detail and "runs it again" in result.detail
    assert result.preemptions == 1


def test_the_new_pod_after_a_preemption_explains_the_job_and_counts_it() -> None:
    running = pod("Running", {"running": {"startedAt": _stamp(5)}}, created_ago=5)
    result = state(_with_policy(job(active=1, failed=2)), _preempted_pod(60), running)
    assert (result.status, result.preemptions) == (JobStatus.RUNNING, 2)


def test_a_preemption_past_the_budget_is_a_failure_even_before_the_job_says_so() -> None:
    pods = [_preempted_pod(90), _preempted_pod(60), _preempted_pod(30)]
    result = state(_with_policy(job(active=0, failed=2)), *pods)
    assert (result.status, result.cause) == (JobStatus.FAILED, FailureCause.PREEMPTED)


def test_a_job_failed_after_its_preemptions_counts_the_ones_run_again() -> None:
    failed_job = _with_policy(
        job(_cond("Failed", reason="PodFailurePolicy", message="exit 1"), failed=3)
    )
    last = pod("Failed", terminated(1, "Error"), created_ago=5)
    result = state(failed_job, _preempted_pod(90), _preempted_pod(60), last)
    assert (result.status, result.cause, result.preemptions) == (
        JobStatus.FAILED,
        FailureCause.EXIT,
        2,
    )


def test_a_job_without_a_pod_failure_policy_reads_a_preempted_pod_as_failed() -> None:
    """Jobs of an older Kinetic (``backoffLimit`` 0) are never run again."""
    result = state(job(active=0), _preempted_pod(30))
    assert (result.status, result.cause, result.preemptions) == (
        JobStatus.FAILED,
        FailureCause.PREEMPTED,
        0,
    )


# -- pods listed for their state alone ---------------------------------------------------------

_OTHER_FIELDS: Obj = {
    "containers": [{"name": "kinetic", "image": IMAGE, "env": [{"name": "A", "value": "1"}]}],
    "volumes": [{"name": "keys", "secret": {"secretName": "keys"}}],
}
_READ_CASES = {
    "waiting": (job(), [pod("Pending")]),
    "image pull": (job(), [pod("Pending", waiting("ImagePullBackOff", "no such image"))]),
    "unschedulable": (
        job(),
        [pod("Pending", None, _cond("PodScheduled", "False", "Unschedulable", "0/3 nodes", 60))],
    ),
    "unschedulable past the deadline": (
        job(),
        [pod("Pending", None, _cond("PodScheduled", "False", "Unschedulable", "none", 901))],
    ),
    "oom": (FAILED_JOB, [pod("Failed", terminated(137, "OOMKilled"))]),
    "start error": (FAILED_JOB, [pod("Failed", terminated(128, "StartError", "exec: nope"))]),
    "evicted": (
        FAILED_JOB,
        [pod("Failed", None, reason="Evicted", message="The node was low on memory.")],
    ),
    "past its deadline": (
        FAILED_JOB,
        [pod("Failed", terminated(143, "Error"), reason="DeadlineExceeded", message="too long")],
    ),
    "preempted, run again": (_with_policy(job(active=1, failed=1)), [_preempted_pod(30)]),
    "unknown": (job(), [pod("Unknown", None, _cond("Ready", "False", message="node gone"))]),
    "not scheduled": (
        job(),
        [
            {
                "metadata": {"name": "a", "creationTimestamp": _stamp(950)},
                "spec": {},
                "status": {"phase": "Pending"},
            }
        ],
    ),
    "gated": (
        job(),
        [
            {
                "metadata": {"name": "a", "creationTimestamp": _stamp(30)},
                "spec": {"schedulingGates": [{"name": "example.com/quota"}]},
                "status": {"phase": "Pending"},
            }
        ],
    ),
    "placed": (
        job(),
        [
            {
                "metadata": {"name": "a", "creationTimestamp": _stamp(950)},
                "spec": {"nodeName": "node-1"},
                "status": {"phase": "Pending"},
            }
        ],
    ),
}


@pytest.mark.parametrize("case", sorted(_READ_CASES))
def test_a_pod_listed_for_its_state_alone_reads_as_the_whole_pod(case: str) -> None:
    """A batch's poll decodes only the fields a state is read from: whatever else a pod holds
    (its containers, volumes, managed fields), every state reads the same from that."""
    from kinetic_gke.k8s.pod_states import decode_pod_list

    job_obj, pods = _READ_CASES[case]
    whole = [
        {
            **p,
            "metadata": {**p["metadata"], "managedFields": [{"manager": "x"}]},
            "spec": {**p.get("spec", {}), **_OTHER_FIELDS},
        }
        for p in pods
    ]
    listed = decode_pod_list(json.dumps({"kind": "PodList", "items": whole}).encode())
    assert "containers" not in listed[0]["spec"]
    assert "managedFields" not in listed[0]["metadata"]
    assert state(job_obj, *listed) == state(job_obj, *whole)
    assert state(job_obj, *listed).status is not JobStatus.NOT_FOUND


def _stopped_pod(owner: str, deadline: int | None) -> Obj:
    """A failed pod whose ``kinetic`` container ended as stopped (SIGTERM: 143); ``owner``
    ``Indexed``: an array Job's."""
    spec: Obj = {} if deadline is None else {"activeDeadlineSeconds": deadline}
    terminated = {"exitCode": 143, "reason": "Error"}
    labels = {"batch.kubernetes.io/job-completion-index": "0"} if owner == "Indexed" else {}
    owner = "Job" if owner == "Indexed" else owner
    return {
        "metadata": {
            "name": "add-1-x",
            "labels": labels,
            "ownerReferences": [{"kind": owner, "name": "add-1"}],
        },
        "spec": spec,
        "status": {
            "phase": "Failed",
            "containerStatuses": [{"name": "kinetic", "state": {"terminated": terminated}}],
        },
    }


@pytest.mark.parametrize(
    ("owner", "deadline", "taken_away"),
    [
        ("Job", None, True),
        ("Job", 60, False),
        ("StatefulSet", None, False),
        ("Indexed", None, False),
    ],
)
def test_a_jobs_run_stopped_with_no_deadline_was_taken_away(
    owner: str, deadline: int | None, taken_away: bool
) -> None:
    """As the Job's pod failure policy counts it (a Kueue preemption deletes the pod with no
    DisruptionTarget); with a deadline the stop may be the deadline's, a slice's host is
    stopped when its group restarts, and an array's index is cancelled by deleting its pod."""
    pod = _stopped_pod(owner, deadline)
    assert disrupted(pod) is taken_away
    expected = FailureCause.PREEMPTED if taken_away else FailureCause.EXIT
    assert termination_cause(pod) is expected
