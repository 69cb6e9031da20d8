"""A batch as one Indexed Job: the manifest (valid, retries and fail-fast said to the Job
controller) and each index's state read off the Job and its pods."""

import itertools
import json
import re
from datetime import UTC, datetime
from typing import Any

import kubernetes_validate
import msgspec
import pytest
from gke_test_support import RecordFactory

from kinetic_gke import array_states, arrays
from kinetic_gke.array_batches import ArrayBatches
from kinetic_gke.array_polls import ArrayPollMemory
from kinetic_gke.labels import pod_selector
from kinetic_protocol import EXIT_PREEMPTIONS_SPENT, BatchManifest, FailureCause, JobStatus

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def _manifest(record: RecordFactory, **fields: Any) -> BatchManifest:
    return BatchManifest(
        group_id="grp-0a1b2c3d",
        func_name="train",
        total_expected=5,
        job_id_prefix="train-0a1b2c3d",
        job_template=record(),
        created_at=NOW.isoformat(),
        array_job="train-0a1b2c3d",
        **fields,
    )


def _rules(job: dict[str, Any]) -> list[dict[str, Any]]:
    rules: list[dict[str, Any]] = job["spec"]["podFailurePolicy"]["rules"]
    return rules


def test_the_array_job_is_valid_and_runs_each_index_as_its_own_job(record: RecordFactory) -> None:
    manifest = _manifest(
        record, max_concurrent=2, retries=1, fail_fast=True, cancel_running_on_fail=True
    )
    job = arrays.array_job_manifest(manifest)
    kubernetes_validate.validate(
        job, kubernetes_validate.latest_version().rsplit(".", 1)[0], strict=True
    )
    spec = job["spec"]
    assert (spec["completionMode"], spec["completions"], spec["parallelism"]) == ("Indexed", 5, 2)
    assert spec["backoffLimitPerIndex"] == 1  # the batch's retries: exactly that many reruns
    assert spec["maxFailedIndexes"] == 0
    container = spec["template"]["spec"]["containers"][0]
    assert container["args"][container["args"].index("--job") + 1] == (
        "train-0a1b2c3d-$(JOB_COMPLETION_INDEX)"
    )
    assert container["args"][container["args"].index("--index") + 1] == "$(JOB_COMPLETION_INDEX)"
    assert "KINETIC_JOB_ID" not in {env["name"] for env in container["env"]}
    # Each run learns its attempt from the failure counts the job controller writes on its pod.
    from_pod = {
        env["name"]: env["valueFrom"]["fieldRef"]["fieldPath"]
        for env in container["env"]
        if "valueFrom" in env
    }
    assert from_pod == {
        "KINETIC_INDEX_FAILURES": f"metadata.annotations['{arrays.FAILURE_COUNT}']",
        "KINETIC_INDEX_PREEMPTIONS": f"metadata.annotations['{arrays.IGNORED_COUNT}']",
    }
    preemptions = {env["name"]: env.get("value") for env in container["env"]}
    assert preemptions["KINETIC_PREEMPTION_RETRIES"] == str(record().preemption_retries)


def test_without_a_limit_every_input_runs_and_without_fail_fast_no_index_stops_the_rest(
    record: RecordFactory,
) -> None:
    spec = arrays.array_job_manifest(_manifest(record))["spec"]
    assert spec["parallelism"] == 5
    assert spec["backoffLimitPerIndex"] == 0  # preemptions are not counted: no retries
    assert "maxFailedIndexes" not in spec


def test_without_retries_any_failed_exit_is_final_and_preemptions_run_again(
    record: RecordFactory,
) -> None:
    rules = _rules(arrays.array_job_manifest(_manifest(record)))
    assert rules[0]["action"] == "Ignore"  # the same attempt again; the runtime keeps the budget
    assert rules[0]["onPodConditions"] == [{"type": "DisruptionTarget", "status": "True"}]
    assert rules[1]["action"] == "FailIndex"
    assert rules[1]["onExitCodes"]["operator"] == "NotIn"
    assert rules[1]["onExitCodes"]["values"] == [0]


def test_retry_on_says_which_exit_codes_run_again(record: RecordFactory) -> None:
    only_oom = _rules(arrays.array_job_manifest(_manifest(record, retries=2, retry_on=["oom"])))
    assert only_oom[1]["onExitCodes"] == {
        "containerName": "kinetic",
        "operator": "NotIn",
        "values": [0, 137],
    }
    default = _rules(arrays.array_job_manifest(_manifest(record, retries=2)))
    # By default every cause but unschedulable/image (no exit code) is retried: none is final.
    assert len(default) == 1
    but_user = _rules(
        arrays.array_job_manifest(_manifest(record, retries=2, retry_on=["exit", "oom"]))
    )
    assert but_user[1]["onExitCodes"]["operator"] == "In"
    assert but_user[1]["onExitCodes"]["values"] == [1, 2, 4, EXIT_PREEMPTIONS_SPENT, 143]


@pytest.mark.parametrize(
    ("retry_on", "stopped_at_deadline_retried"), [(["timeout"], True), (["oom"], False)]
)
def test_a_run_stopped_at_its_deadline_is_retried_as_a_timeout_not_an_oom(
    record: RecordFactory, retry_on: list[str], stopped_at_deadline_retried: bool
) -> None:
    """The kubelet stops a pod past its deadline with SIGTERM, which the runtime ends as
    stopped (143; ``KINETIC_STOP_GRACE``), never 137, an out-of-memory kill's code."""
    [_, final] = _rules(arrays.array_job_manifest(_manifest(record, retries=1, retry_on=retry_on)))
    assert final["onExitCodes"]["operator"] == "NotIn"
    retried = set(final["onExitCodes"]["values"]) - {0}
    assert (143 in retried) is stopped_at_deadline_retried
    assert (137 in retried) is not stopped_at_deadline_retried


def test_a_run_past_its_deadline_reads_cause_timeout_whatever_its_exit_code() -> None:
    """Read from the pod's ``DeadlineExceeded`` reason, not from 143 or 137 (137 is also an
    out-of-memory kill's code)."""
    pods = [_pod(0, "Failed", code=code) for code in (143, 137)]
    for pod in pods:
        pod["status"] |= {"reason": "DeadlineExceeded", "message": "Pod was active too long"}
    for pod in pods:
        [state] = _states(_job(failedIndexes="0"), [pod], [0]).values()
        assert (state.status, state.cause) == (JobStatus.FAILED, FailureCause.TIMEOUT)


def test_fail_fast_that_lets_running_children_finish_is_not_an_array(
    record: RecordFactory,
) -> None:
    assert not arrays.expressible(_manifest(record, fail_fast=True))
    assert arrays.expressible(_manifest(record, fail_fast=True, cancel_running_on_fail=True))
    too_many = msgspec.structs.replace(_manifest(record), total_expected=arrays.MAX_INDEXES + 1)
    assert not arrays.expressible(too_many)


def test_index_sets_are_read_as_intervals() -> None:
    assert array_states.parse_indexes("0-2,5,7-8") == {0, 1, 2, 5, 7, 8}
    assert array_states.parse_indexes("") == set()
    assert array_states.parse_indexes(None) == set()


def _pod(
    index: int,
    phase: str,
    *,
    created: str = "2026-01-01T00:00:00Z",
    code: int = 0,
    attempt: int = 0,
    preempted: bool = False,
) -> Any:
    status: dict[str, Any] = {"phase": phase}
    if phase in ("Succeeded", "Failed"):
        status["containerStatuses"] = [{"state": {"terminated": {"exitCode": code}}}]
    if preempted:
        status["conditions"] = [{"type": "DisruptionTarget", "status": "True"}]
    return {
        "metadata": {
            "labels": {arrays.INDEX_LABEL: str(index)},
            "annotations": {arrays.FAILURE_COUNT: str(attempt)},
            "creationTimestamp": created,
        },
        "spec": {"nodeName": "node"},
        "status": status,
    }


def _states(job: Any, pods: list[Any], indexes: Any) -> dict[int, Any]:
    """Attempt 0 of each of ``indexes``, by index."""
    found = array_states.attempt_states(
        job, pods, [(i, 0) for i in indexes], unschedulable_timeout=60, now=NOW
    )
    return {index: state for (index, _), state in found.items()}


def _job(**status: Any) -> dict[str, Any]:
    return {"metadata": {"name": "train-0a1b2c3d"}, "spec": {}, "status": status}


def test_each_index_reads_its_own_outcome() -> None:
    job = _job(completedIndexes="0", failedIndexes="1")
    pods = [_pod(0, "Succeeded"), _pod(1, "Failed", code=1), _pod(2, "Running")]
    states = _states(job, pods, range(4))
    assert states[0].status is JobStatus.SUCCEEDED
    assert (states[1].status, states[1].exit_code) == (JobStatus.FAILED, 1)
    assert states[2].status is JobStatus.RUNNING
    assert states[3].status is JobStatus.PENDING  # not started yet (max_concurrent)


def test_a_failed_run_the_job_has_not_settled_is_run_again_not_failed() -> None:
    pods = [
        _pod(0, "Failed", code=1, created="2026-01-01T00:00:00Z"),
        _pod(0, "Pending", created="2026-01-01T00:00:05Z"),
    ]
    [state] = _states(_job(), pods[:1], [0]).values()
    assert state.status is JobStatus.PENDING
    assert "runs it again" in state.detail


def test_an_attempt_the_job_ran_again_failed_and_names_the_attempt_that_follows() -> None:
    pods = [
        _pod(0, "Failed", code=1, created="2026-01-01T00:00:00Z"),
        _pod(0, "Failed", code=1, created="2026-01-01T00:00:05Z", attempt=1),
        _pod(0, "Running", created="2026-01-01T00:00:09Z", attempt=2),
    ]
    states = array_states.attempt_states(
        _job(), pods, [(0, 0), (0, 1), (0, 2)], unschedulable_timeout=60, now=NOW
    )
    first, second, third = states[0, 0], states[0, 1], states[0, 2]
    assert (first.status, first.exit_code, first.next_attempt) == (JobStatus.FAILED, 1, 2)
    assert (second.status, second.next_attempt) == (JobStatus.FAILED, 2)
    assert (third.status, third.next_attempt) == (JobStatus.RUNNING, None)


def test_a_preempted_run_is_the_same_attempt_until_its_preemptions_are_spent() -> None:
    pods = [
        _pod(0, "Failed", code=137, preempted=True, created="2026-01-01T00:00:00Z"),
        _pod(0, "Running", created="2026-01-01T00:00:05Z"),
    ]
    [running] = _states(_job(), pods, [0]).values()
    assert (running.status, running.preemptions, running.next_attempt) == (
        JobStatus.RUNNING,
        1,
        None,
    )
    spent = [
        *pods[:1],
        _pod(0, "Failed", code=137, preempted=True, created="2026-01-01T00:00:05Z"),
        _pod(0, "Failed", code=EXIT_PREEMPTIONS_SPENT, created="2026-01-01T00:00:09Z"),
    ]
    [failed] = _states(_job(failedIndexes="0"), spent, [0]).values()
    assert (failed.status, failed.cause) == (JobStatus.FAILED, FailureCause.PREEMPTED)
    assert failed.preemptions == 1  # the second preemption was not run again


def test_a_preemption_counts_only_once_the_job_runs_the_attempt_again() -> None:
    """Right after a second preemption, before the Job has made the replacement pod: only
    the first run was taken away and run again."""
    pods = [
        _pod(0, "Failed", code=137, preempted=True, created="2026-01-01T00:00:00Z"),
        _pod(0, "Failed", code=137, preempted=True, created="2026-01-01T00:00:05Z"),
    ]
    [state] = _states(_job(), pods, [0]).values()
    assert (state.status, state.preemptions) == (JobStatus.PENDING, 1)


def test_a_job_stopped_by_fail_fast_cancels_its_unfinished_indexes() -> None:
    job = _job(
        failedIndexes="1",
        completedIndexes="2",
        conditions=[
            {"type": "FailureTarget", "status": "True", "reason": "MaxFailedIndexesExceeded"}
        ],
    )
    pods = [_pod(0, "Running"), _pod(1, "Failed", code=1), _pod(2, "Succeeded")]
    states = _states(job, pods, range(3))
    assert (states[0].status, states[0].cause) == (JobStatus.FAILED, FailureCause.CANCELLED)
    assert "MaxFailedIndexesExceeded" in states[0].detail
    assert states[1].status is JobStatus.FAILED
    assert states[2].status is JobStatus.SUCCEEDED


def test_an_index_that_succeeded_before_fail_fast_stopped_the_job_succeeded() -> None:
    """Fail-fast stops the Job before it records every index: a pod that had already
    succeeded is its index's outcome, not a cancellation."""
    job = _job(
        failedIndexes="1",
        conditions=[
            {"type": "FailureTarget", "status": "True", "reason": "MaxFailedIndexesExceeded"}
        ],
    )
    states = _states(job, [_pod(0, "Succeeded"), _pod(1, "Failed", code=1)], range(2))
    assert (states[0].status, states[0].cause) == (JobStatus.SUCCEEDED, None)
    assert (states[1].status, states[1].exit_code) == (JobStatus.FAILED, 1)


def test_a_completed_index_needs_no_pod_and_a_cleaned_or_podless_failed_one_is_gone() -> None:
    """The Job says an index succeeded (its pod is not listed); a failed index's reason is its
    pod's, and without one it was deleted. A cleaned index and a gone Job hold nothing."""
    job = _job(completedIndexes="0", failedIndexes="1")
    states = _states(job, [], [0, 1])
    assert (states[0].status, states[1].status) == (JobStatus.SUCCEEDED, JobStatus.NOT_FOUND)
    cleaned = array_states.attempt_states(
        job, [], [(0, 0)], unschedulable_timeout=60, now=NOW, cleaned={0}
    )
    assert cleaned[0, 0].status is JobStatus.NOT_FOUND
    gone = _states(None, [_pod(0, "Running")], [0])
    assert gone[0].status is JobStatus.NOT_FOUND


def test_a_completed_index_reads_which_attempt_succeeded_from_its_failed_pods_alone() -> None:
    """Attempt 0 failed (counted), attempt 1 was preempted once and then succeeded: its
    succeeded pod is not listed, the failed ones say all of it."""
    pods = [
        _pod(0, "Failed", code=1, created="2026-01-01T00:00:00Z"),
        _pod(0, "Failed", code=137, preempted=True, attempt=1, created="2026-01-01T00:00:05Z"),
    ]
    states = array_states.attempt_states(
        _job(completedIndexes="0"), pods, [(0, 0), (0, 1)], unschedulable_timeout=60, now=NOW
    )
    first, second = states[0, 0], states[0, 1]
    assert (first.status, first.exit_code, first.next_attempt) == (JobStatus.FAILED, 1, 1)
    assert (second.status, second.preemptions) == (JobStatus.SUCCEEDED, 1)


def _refused(message: str, first: str, job: str = "train-0a1b2c3d", uid: str = "u1") -> Any:
    return {
        "involvedObject": {"kind": "Job", "name": job, "uid": uid},
        "reason": "FailedCreate",
        "message": message,
        "firstTimestamp": first,
        "lastTimestamp": first,
    }


def _podless(job: Any, pods: list[Any], events: list[Any], now: datetime = NOW) -> Any:
    """The state of index 1, which has no pod, given the Job's FailedCreate ``events``."""
    found = array_states.attempt_states(
        job, pods, [(1, 0)], unschedulable_timeout=60, now=now, refusals=lambda: events
    )
    return found[1, 0]


def _unread() -> list[Any]:
    raise AssertionError("the Job's events were read although no index could need them")


def test_an_index_without_a_pod_waits_its_turn_without_reading_any_event() -> None:
    job = _job()
    job["spec"]["parallelism"] = 1
    found = array_states.attempt_states(
        job, [_pod(0, "Running")], [(1, 0)], unschedulable_timeout=60, now=NOW, refusals=_unread
    )
    assert found[1, 0].status is JobStatus.PENDING
    assert found[1, 0].detail == "waiting for its turn: this Job runs 1 inputs at a time"


def test_an_index_the_cluster_refuses_to_create_is_pending_with_the_reason_then_fails() -> None:
    job = _job()
    job["metadata"]["uid"] = "u1"
    events = [
        _refused('pods "train-0a1b2c3d-1-" is forbidden: exceeded quota', "2026-01-01T00:00:00Z")
    ]
    assert _podless(job, [], []).detail == "waiting for its pod"
    early = _podless(job, [], events, now=datetime(2026, 1, 1, 0, 0, 30, tzinfo=UTC))
    assert (early.status, early.detail) == (
        JobStatus.PENDING,
        'FailedCreate: pods "train-0a1b2c3d-1-" is forbidden: exceeded quota',
    )
    late = _podless(job, [], events, now=datetime(2026, 1, 1, 0, 1, 1, tzinfo=UTC))
    assert (late.status, late.cause) == (JobStatus.FAILED, FailureCause.UNSCHEDULABLE)
    assert late.detail == f"{early.detail} (for 61s)"


def test_a_refusal_has_no_deadline_while_a_run_of_the_job_may_free_what_it_lacks() -> None:
    """A quota full of the batch's own pods frees up as they end: the index waits its turn."""
    job = _job()
    job["metadata"]["uid"] = "u1"
    events = [_refused("exceeded quota", "2025-12-31T00:00:00Z")]
    state = _podless(job, [_pod(0, "Running")], events)
    assert state.status is JobStatus.PENDING
    assert (
        state.detail
        == "FailedCreate: exceeded quota (the Job tries again as its running inputs end)"
    )


def test_a_refusals_deadline_counts_from_the_last_run_of_the_job_to_end() -> None:
    job = _job()
    job["metadata"]["uid"] = "u1"
    events = [_refused("exceeded quota", "2025-12-31T00:00:00Z")]
    ended = _pod(0, "Succeeded", created="2025-12-31T00:00:00Z")
    ended["status"]["containerStatuses"][0]["state"]["terminated"]["finishedAt"] = (
        "2025-12-31T23:59:30Z"
    )
    assert _podless(job, [ended], events).status is JobStatus.PENDING  # 30 s since it ended
    assert _podless(job, [_pod(0, "Succeeded", created="2025-12-31T00:00:00Z")], events).status is (
        JobStatus.FAILED
    )


def test_only_the_jobs_own_refusals_count_not_another_jobs_or_an_earlier_one_of_its_name() -> None:
    job = _job()
    job["metadata"]["uid"] = "u1"
    others = [
        _refused("exceeded quota", "2025-12-31T00:00:00Z", job="another-job"),
        _refused("exceeded quota", "2025-12-31T00:00:00Z", uid="an-earlier-job"),
    ]
    assert _podless(job, [], others).detail == "waiting for its pod"


def test_an_array_job_lists_each_index_that_has_a_pod_as_a_job() -> None:
    job = {
        "metadata": {
            "name": "train-0a1b2c3d",
            "annotations": {arrays.JOB_ID_PREFIX: "train-0a1b2c3d"},
        },
        "spec": {"completionMode": "Indexed", "completions": 3},
    }
    pods = [
        _pod(0, "Running"),
        _pod(2, "Failed"),
        _pod(2, "Running", attempt=1),
        _pod(1, "Running"),
    ]
    for pod in pods[:3]:
        pod["metadata"]["labels"][arrays.JOB_NAME_LABEL] = "train-0a1b2c3d"
    pods[3]["metadata"]["labels"][arrays.JOB_NAME_LABEL] = "another-job"
    assert array_states.index_job_ids(job, pods) == [
        "train-0a1b2c3d-0",
        "train-0a1b2c3d-2",
        "train-0a1b2c3d-2-r1",
    ]
    assert array_states.index_job_ids({"metadata": {}, "spec": {}}, pods) == []


def test_an_index_is_settled_once_the_job_recorded_it_or_stopped_them_all() -> None:
    assert array_states.index_settled(_job(completedIndexes="0-1"), 1)
    assert array_states.index_settled(_job(failedIndexes="3"), 3)
    assert not array_states.index_settled(_job(completedIndexes="0"), 1)
    stopped = _job(conditions=[{"type": "Failed", "status": "True", "reason": "x"}])
    assert array_states.index_settled(stopped, 1)


class _IndexCleanup:
    """What ``delete_index`` reaches: the index's pods, deleted on request, and its Job, which
    records the index's outcome only at its ``recorded_at``-th read (the job controller
    catches up after the pods are gone)."""

    namespace = "default"

    def __init__(self, pods: list[Any], recorded_at: int) -> None:
        self.pods, self.recorded_at, self.job_reads = pods, recorded_at, 0
        self.last_job: Any = None
        self.patches: list[Any] = []
        self.batch = type("Batch", (), {"read_namespaced_job": None, "patch_namespaced_job": 1})()
        self.core = type("Core", (), {"delete_namespaced_pod": None})()

    def list_pods(self, selector: str) -> list[Any]:
        return list(self.pods)

    def send(self, doing: str, fn: Any, name: str, namespace: str, *body: Any) -> None:
        if fn is self.batch.patch_namespaced_job:
            self.patches.extend(body)
            return
        self.pods = [pod for pod in self.pods if pod["metadata"]["name"] != name]

    def read_or_none(self, doing: str, fn: Any, *args: Any) -> Any:
        self.job_reads += 1
        recorded = {"completedIndexes": "1"} if self.job_reads >= self.recorded_at else {}
        self.last_job = _job(**recorded)
        self.last_job["metadata"]["resourceVersion"] = str(self.job_reads)
        return self.last_job


def _await_gone(present: Any, what: str, selector: str) -> None:
    for _ in range(10):
        if not present():
            return
    raise AssertionError(f"{what} never went")


def test_deleting_an_index_waits_until_its_job_has_recorded_the_index(
    record: RecordFactory,
) -> None:
    """Until the Job records it, an index without pods reads as one waiting for its pod."""
    child = _manifest(record).child_record(1, 0)
    pod = _part_pod(child.k8s_name, 1, "Succeeded")
    pod["metadata"]["name"] = "train-0a1b2c3d-1-abcde"
    cluster = _IndexCleanup([pod], recorded_at=2)
    ArrayBatches(cluster, "kinetic").delete_index(child, _await_gone)  # type: ignore[arg-type]
    assert cluster.pods == []
    assert cluster.last_job is not None, "returned without reading the Job"
    assert array_states.index_settled(cluster.last_job, 1)
    [patch] = cluster.patches  # noted on the Job, for polls in other processes
    assert patch["metadata"]["annotations"] == {arrays.CLEANED_INDEXES: "1"}
    assert patch["metadata"]["resourceVersion"] == str(cluster.job_reads)


@pytest.mark.parametrize("index", [0, 4])
def test_a_child_of_an_array_batch_names_the_shared_job(record: RecordFactory, index: int) -> None:
    child = _manifest(record).child_record(index, 0)
    assert (child.job_id, child.k8s_name, child.in_array) == (
        f"train-0a1b2c3d-{index}",
        "train-0a1b2c3d",
        True,
    )


# -- a batch larger than one Job holds -----------------------------------------------------------


def _split(record: RecordFactory, **fields: Any) -> BatchManifest:
    """7 inputs, at most 3 a Job: Jobs of 3, 3 and 1."""
    return msgspec.structs.replace(_manifest(record, **fields), total_expected=7, array_part_size=3)


def test_a_batch_larger_than_a_job_is_split_and_each_input_maps_to_one_job_and_index(
    record: RecordFactory,
) -> None:
    manifest = _split(record)
    assert manifest.array_parts == 3
    jobs = [arrays.array_job_manifest(manifest, part) for part in range(3)]
    assert [job["metadata"]["name"] for job in jobs] == [
        "train-0a1b2c3d",
        "train-0a1b2c3d-p1",
        "train-0a1b2c3d-p2",
    ]
    assert [job["spec"]["completions"] for job in jobs] == [3, 3, 1]
    assert [job["metadata"]["annotations"].get(arrays.INDEX_OFFSET) for job in jobs] == [
        None,
        "3",
        "6",
    ]
    args = [job["spec"]["template"]["spec"]["containers"][0]["args"] for job in jobs]
    assert "--index-offset" not in args[0]
    assert args[2][args[2].index("--index-offset") + 1] == "6"
    for index in range(7):
        child = manifest.child_record(index, 0)
        assert child.job_id == f"train-0a1b2c3d-{index}"  # the batch's ids, whatever its Job
        assert child.k8s_name == manifest.array_part_name(index // 3)
        assert int(child.group_index or 0) - child.array_offset == index % 3
    fifth = manifest.child_record(5, 0)
    assert pod_selector(fifth).endswith(
        f"{arrays.JOB_NAME_LABEL}=train-0a1b2c3d-p1,{arrays.INDEX_LABEL}=2"
    )


def test_max_concurrent_is_shared_between_the_jobs_of_a_split_batch(
    record: RecordFactory,
) -> None:
    assert [arrays.part_parallelism(_split(record, max_concurrent=6), p) for p in range(3)] == [
        2,
        2,
        1,
    ]
    assert [arrays.part_parallelism(_split(record), p) for p in range(3)] == [3, 3, 1]
    assert arrays.part_parallelism(_split(record, max_concurrent=2), 0) == 1  # one at least


def test_fail_fast_over_several_jobs_is_not_expressible(record: RecordFactory) -> None:
    """One Job's failed index cannot stop the indexes of another."""
    fail_fast = {"fail_fast": True, "cancel_running_on_fail": True}
    assert arrays.expressible(_manifest(record, **fail_fast))
    assert not arrays.expressible(_split(record, **fail_fast))
    assert arrays.expressible(_split(record))
    too_big = msgspec.structs.replace(
        _split(record),
        total_expected=arrays.MAX_INDEXES + 2,
        array_part_size=arrays.MAX_INDEXES + 1,
    )
    assert not arrays.expressible(too_big)


class _Cluster:
    """The LISTs a batch's status reads, answered from ``jobs`` and ``pods`` as the API server
    does for the selectors a poll sends (a completion-index set, not-succeeded phases); each
    call counted, and the pods each pod listing returned kept."""

    namespace = "default"

    def __init__(self, jobs: list[Any], pods: list[Any], events: list[Any] | None = None) -> None:
        self.jobs, self.pods, self.events, self.calls = jobs, pods, events or [], 0
        self.listed: list[list[Any]] = []
        self.batch = type("Batch", (), {"list_namespaced_job": None})()
        self.core = type("Core", (), {"list_namespaced_pod": None})()

    def read(self, doing: str, *args: Any, **kwargs: Any) -> Any:
        self.calls += 1
        return {"items": self.jobs}

    def read_bytes(self, doing: str, *args: Any, label_selector: str, **kwargs: Any) -> bytes:
        self.calls += 1
        chosen = re.search(rf"{re.escape(arrays.INDEX_LABEL)} in \(([0-9,]*)\)", label_selector)
        indexes = None if chosen is None else {int(i) for i in chosen[1].split(",")}
        fields = kwargs.get("field_selector")
        assert fields in (None, "status.phase!=Succeeded"), fields
        found = [
            pod
            for pod in self.pods
            if (indexes is None or array_states.pod_index(pod) in indexes)
            and (fields is None or pod["status"]["phase"] != "Succeeded")
        ]
        self.listed.append(found)
        return json.dumps({"items": found}).encode()

    def failed_create_events(self, kind: str) -> list[Any]:
        assert kind == "Job"
        self.calls += 1
        return self.events


_pod_names = itertools.count()


def _part_pod(job: str, index: int, phase: str, attempt: int = 0) -> Any:
    pod = _pod(index, phase, attempt=attempt, code=0 if phase == "Succeeded" else 1)
    pod["metadata"]["labels"][arrays.JOB_NAME_LABEL] = job
    pod["metadata"]["name"] = f"{job}-{index}-{next(_pod_names)}"
    return pod


def test_the_status_of_a_split_batch_reads_each_input_in_its_own_job(
    record: RecordFactory,
) -> None:
    """Index 1 of the first Job failed; index 1 of the second succeeded on its retry: the same
    local index, two different inputs. Two API calls for all of it."""
    manifest = _split(record)
    names = [manifest.array_part_name(part) for part in range(3)]
    jobs = [
        {
            "metadata": {"name": names[0]},
            "spec": {},
            "status": {"completedIndexes": "0,2", "failedIndexes": "1"},
        },
        {"metadata": {"name": names[1]}, "spec": {}, "status": {"completedIndexes": "0-2"}},
        {"metadata": {"name": names[2]}, "spec": {}, "status": {}},
    ]
    pods = [_part_pod(names[0], i, "Failed" if i == 1 else "Succeeded") for i in range(3)]
    pods += [_part_pod(names[1], i, "Succeeded") for i in range(3)]
    pods += [_part_pod(names[1], 1, "Failed"), _part_pod(names[1], 1, "Succeeded", attempt=1)]
    pods[-2]["metadata"]["creationTimestamp"] = "2025-12-31T00:00:00Z"
    pods += [_part_pod(names[2], 0, "Running")]
    cluster = _Cluster(jobs, pods)
    batches = ArrayBatches(cluster, "kinetic")  # type: ignore[arg-type]
    records = [manifest.child_record(i, 0) for i in range(7)] + [manifest.child_record(4, 1)]
    found = batches.statuses(records, unschedulable_timeout=60)
    assert cluster.calls == 2
    statuses = [found[r.job_id].status for r in records]
    assert statuses == [
        JobStatus.SUCCEEDED,
        JobStatus.FAILED,
        JobStatus.SUCCEEDED,
        JobStatus.SUCCEEDED,
        JobStatus.FAILED,
        JobStatus.SUCCEEDED,
        JobStatus.RUNNING,
        JobStatus.SUCCEEDED,
    ]
    assert found[records[4].job_id].next_attempt == 1  # input 4 ran again as attempt 1


def test_each_index_of_a_later_job_is_listed_under_the_batchs_id() -> None:
    job = {
        "metadata": {
            "name": "train-0a1b2c3d-p1",
            "annotations": {arrays.JOB_ID_PREFIX: "train-0a1b2c3d", arrays.INDEX_OFFSET: "3"},
        },
        "spec": {"completionMode": "Indexed"},
    }
    pods = [_part_pod("train-0a1b2c3d-p1", 0, "Running"), _part_pod("train-0a1b2c3d", 0, "Running")]
    assert array_states.index_job_ids(job, pods) == ["train-0a1b2c3d-3"]


def test_a_poll_reads_the_refusals_of_every_job_of_a_batch_in_one_more_list(
    record: RecordFactory,
) -> None:
    """Two Jobs have inputs without a pod; only the second Job's are refused."""
    manifest = _split(record)
    names = [manifest.array_part_name(part) for part in range(3)]
    jobs = [{"metadata": {"name": name, "uid": name}, "spec": {}, "status": {}} for name in names]
    just_now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")  # the poll reads the clock
    events = [_refused("exceeded quota", just_now, job=names[1], uid=names[1])]
    cluster = _Cluster(jobs, [_part_pod(names[0], 0, "Running")], events)
    batches = ArrayBatches(cluster, "kinetic")  # type: ignore[arg-type]
    records = [manifest.child_record(i, 0) for i in range(7)]
    found = batches.statuses(records, unschedulable_timeout=60)
    assert cluster.calls == 3
    details = [found[r.job_id].detail for r in records]
    assert details[1:] == [
        "waiting for its pod",
        "waiting for its pod",
        "FailedCreate: exceeded quota",
        "FailedCreate: exceeded quota",
        "FailedCreate: exceeded quota",
        "waiting for its pod",
    ]


@pytest.mark.parametrize("enabled", [True, False])
def test_a_poll_pauses_the_cycle_collector_and_leaves_it_as_it_found_it(
    record: RecordFactory, enabled: bool
) -> None:
    """The pods a poll decodes are garbage by reference counting once it returns; the
    collector walking the heap meanwhile cost 0.1 to 0.2 s of a 10,000-child poll."""
    import gc

    manifest = _manifest(record)
    seen: list[bool] = []

    class Watching(_Cluster):
        def read_bytes(self, doing: str, *args: Any, **kwargs: Any) -> bytes:
            seen.append(gc.isenabled())
            return super().read_bytes(doing, *args, **kwargs)

    job = {"metadata": {"name": manifest.array_job}, "spec": {}, "status": {}}
    batches = ArrayBatches(Watching([job], []), "kinetic")  # type: ignore[arg-type]
    (gc.enable if enabled else gc.disable)()
    try:
        batches.statuses([manifest.child_record(0, 0)], unschedulable_timeout=60)
        assert (seen, gc.isenabled()) == ([False], enabled)
    finally:
        gc.enable()


# -- a poll lists only the pods that can still change --------------------------------------------


def _ten(**status: Any) -> dict[str, Any]:
    """A Job of 10 indexes with ``status``."""
    return {
        "metadata": {"name": "train-0a1b2c3d", "uid": "u1"},
        "spec": {"completions": 10},
        "status": status,
    }


def _settle(pod: Any, phase: str, code: int) -> None:
    pod["status"] = {
        "phase": phase,
        "containerStatuses": [{"state": {"terminated": {"exitCode": code}}}],
    }


def test_a_poll_lists_no_pod_of_an_index_settled_before_the_poll_before_it(
    record: RecordFactory,
) -> None:
    """Six indexes succeeded, one failed, three run. The first poll lists the pods that did not
    succeed; each later one only those of the indexes open at the poll before, and none once
    all settled; a failure's reason is kept after its pod is gone."""
    manifest = msgspec.structs.replace(_manifest(record), total_expected=10)
    records = [manifest.child_record(i, 0) for i in range(10)]
    pods = [_part_pod(manifest.array_job, i, "Succeeded") for i in range(6)]
    pods += [_part_pod(manifest.array_job, 6, "Failed")]
    pods += [_part_pod(manifest.array_job, i, "Running") for i in (7, 8, 9)]
    cluster = _Cluster([_ten(completedIndexes="0-5", failedIndexes="6")], pods)
    batches = ArrayBatches(cluster, "kinetic")  # type: ignore[arg-type]

    def poll() -> tuple[dict[str, Any], int, list[int]]:
        before = cluster.calls
        found = batches.statuses(records, unschedulable_timeout=60)
        listed = cluster.listed[-1] if cluster.calls - before == 2 else []
        return found, cluster.calls - before, sorted(map(array_states.pod_index, listed))

    first, calls, listed = poll()
    assert (calls, listed) == (2, [6, 7, 8, 9])
    assert [first[r.job_id].status for r in records[5:]] == [
        JobStatus.SUCCEEDED,
        JobStatus.FAILED,
        *[JobStatus.RUNNING] * 3,
    ]
    _settle(pods[7], "Succeeded", 0)
    _settle(pods[8], "Failed", 1)
    cluster.jobs = [_ten(completedIndexes="0-5,7", failedIndexes="6,8")]
    cluster.pods = [pod for pod in pods if array_states.pod_index(pod) != 6]  # collected
    second, calls, listed = poll()
    assert (calls, listed) == (2, [8, 9])  # index 7's pod succeeded: the Job says so
    assert (second[records[6].job_id].status, second[records[6].job_id].exit_code) == (
        JobStatus.FAILED,
        1,
    )
    assert [second[r.job_id].status for r in records[7:]] == [
        JobStatus.SUCCEEDED,
        JobStatus.FAILED,
        JobStatus.RUNNING,
    ]
    _settle(pods[9], "Succeeded", 0)
    cluster.jobs = [_ten(completedIndexes="0-5,7,9", failedIndexes="6,8")]
    assert poll()[1:] == (2, [])
    settled, calls, _ = poll()
    assert calls == 1  # nothing can change: no pod is listed
    assert [settled[r.job_id].status for r in records].count(JobStatus.FAILED) == 2


def test_a_fresh_poll_of_a_job_stopped_by_fail_fast_lists_its_succeeded_pods_too(
    record: RecordFactory,
) -> None:
    """An index that succeeded before fail-fast stopped the Job is not recorded by it: its
    succeeded pod is its outcome."""
    manifest = _manifest(record)
    stopped = _ten(failedIndexes="1")
    stopped["status"]["conditions"] = [
        {"type": "FailureTarget", "status": "True", "reason": "MaxFailedIndexesExceeded"}
    ]
    pods = [
        _part_pod(manifest.array_job, 0, "Succeeded"),
        _part_pod(manifest.array_job, 1, "Failed"),
    ]
    cluster = _Cluster([stopped], pods)
    batches = ArrayBatches(cluster, "kinetic")  # type: ignore[arg-type]
    records = [manifest.child_record(i, 0) for i in range(3)]
    found = batches.statuses(records, unschedulable_timeout=60)
    assert [found[r.job_id].status for r in records] == [
        JobStatus.SUCCEEDED,
        JobStatus.FAILED,
        JobStatus.FAILED,
    ]
    assert found[records[2].job_id].cause is FailureCause.CANCELLED


def test_an_index_cleaned_up_reads_as_gone_though_its_job_recorded_it(
    record: RecordFactory,
) -> None:
    """Its succeeded pod is never listed: the cleanup itself tells the backend's polls."""
    manifest = _manifest(record)
    child = manifest.child_record(1, 0)
    pod = _part_pod(child.k8s_name, 1, "Succeeded")
    memory = ArrayPollMemory()
    cleanup = _IndexCleanup([pod], recorded_at=1)
    ArrayBatches(cleanup, "kinetic", memory).delete_index(child, _await_gone)  # type: ignore[arg-type]
    done = _job(completedIndexes="0-1")  # the Job the cleanup read
    done["spec"]["completions"] = 2
    cluster = _Cluster([done], [])
    found = ArrayBatches(cluster, "kinetic", memory).statuses(  # type: ignore[arg-type]
        [manifest.child_record(i, 0) for i in range(2)], unschedulable_timeout=60
    )
    assert found[manifest.child_record(0, 0).job_id].status is JobStatus.SUCCEEDED
    assert found[child.job_id].status is JobStatus.NOT_FOUND
