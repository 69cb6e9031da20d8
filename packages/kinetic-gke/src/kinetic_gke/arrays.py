"""A whole batch as one Indexed Job: its manifest, and each index's state read off the Job.

Input ``i`` of the batch is completion index ``i``: its pod's hostname, and its Kinetic job id,
is ``<job_id_prefix>-<i>``, its runtime reads input ``i`` of the stored batch, and it stores
its result under that job id, so each index is a Kinetic job like any other. The job controller
does what a per-child batch's submitter does: it keeps ``max_concurrent`` indexes running
(``parallelism``), runs a failed index again within the batch's ``retries``
(``backoffLimitPerIndex``, by the pod failure policy that a single Job has too) and, with
fail-fast, fails the Job at the first failed index (``maxFailedIndexes: 0``), stopping the
rest. Nothing of it needs a client alive.
"""

import contextlib
from collections import defaultdict
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from typing import Any

import msgspec

from kinetic_gke import status
from kinetic_gke.k8s.connection import ClusterConnection, Obj
from kinetic_gke.k8s.errors import NotFound
from kinetic_gke.k8s.jobs import JobWorkload
from kinetic_gke.labels import APP, ATTEMPT, COMPLETION_INDEX, GROUP_ID
from kinetic_gke.manifests import (
    DEFAULT_TTL_SECONDS,
    RUNTIME_COMMAND,
    PodOptions,
    pod_failure_policy,
    pod_template,
)
from kinetic_protocol import BatchManifest, FailureCause, JobState, JobStatus, array_runtime_args
from kinetic_protocol.causes import retry_causes

__all__ = [
    "INDEX_LABEL",
    "INDEX_VARIABLE",
    "JOBS",
    "JOB_ID_PREFIX",
    "MAX_INDEXES",
    "array_job_manifest",
    "array_labels",
    "delete_index_pods",
    "expressible",
    "index_job_ids",
    "index_settled",
    "index_states",
    "parse_indexes",
]

INDEX_LABEL = COMPLETION_INDEX
INDEX_VARIABLE = "JOB_COMPLETION_INDEX"
"""The variable the job controller sets in each container of an Indexed Job: its index."""
JOB_NAME_LABEL = "batch.kubernetes.io/job-name"
"""The label the job controller puts on each pod of a Job: the Job's name."""
JOB_ID_PREFIX = "kinetic.dev/job-id-prefix"
"""Annotation of an array Job: its indexes' job ids are ``<prefix>-<index>``."""
JOBS = JobWorkload()
"""Array Jobs are Jobs, whatever workload a backend's single jobs are."""
MAX_INDEXES = 100_000
"""The most completions an Indexed Job with a per-index backoff limit may have."""
_EXIT_CODES = {
    FailureCause.USER: (1,),
    FailureCause.INFRASTRUCTURE: (2,),
    FailureCause.TIMEOUT: (4,),
    FailureCause.OOM: (137,),
}
"""The exit codes that name a cause: ``kinetic_runtime``'s own (the function raised, a phase
before it failed, its ``timeout=`` passed) and the kernel's kill of a container out of memory.
Any other non-zero code is cause ``exit``."""


def expressible(manifest: BatchManifest) -> bool:
    """Whether the Job API says what the batch asks for. Not: fail-fast that lets running
    children finish (``maxFailedIndexes`` stops every index), and more inputs than one Job
    holds; such a batch takes the per-child path."""
    if manifest.fail_fast and not manifest.cancel_running_on_fail:
        return False
    return 0 < manifest.total_expected <= MAX_INDEXES


def array_labels(manifest: BatchManifest, app: str = "kinetic") -> dict[str, str]:
    """The labels of the Job and of each of its pods: the batch's, not any one child's."""
    return {APP: app, GROUP_ID: manifest.group_id, ATTEMPT: "0"}


def _retry_rules(manifest: BatchManifest) -> dict[str, Any]:
    """The single Job's pod failure policy, with ``FailIndex`` for attempts not retried: a
    preemption, and an exit whose cause ``retry_on`` names while ``retries`` remain, run the
    index again; any other exit fails the index."""
    if manifest.retries == 0:
        return pod_failure_policy(failed_attempt="FailIndex")
    causes = retry_causes(manifest.retry_on)
    if FailureCause.EXIT in causes:
        final = sorted(
            code for cause, codes in _EXIT_CODES.items() if cause not in causes for code in codes
        )
        return pod_failure_policy(failed_attempt="FailIndex", final_codes=final)
    retried = [code for cause in causes for code in _EXIT_CODES.get(cause, ())]
    return pod_failure_policy(failed_attempt="FailIndex", retried_codes=retried)


def _budget(manifest: BatchManifest) -> int:
    """How many more runs an index may have. The Job counts every failure against one limit,
    so the batch's ``retries`` are it when given (a preemption spends one too); without them,
    only preemptions run again, within the job's ``preemption_retries`` as for one job."""
    return manifest.retries or manifest.job_template.preemption_retries


def array_job_manifest(
    manifest: BatchManifest,
    *,
    options: PodOptions | None = None,
    ttl_seconds: int = DEFAULT_TTL_SECONDS,
    command: tuple[str, ...] = RUNTIME_COMMAND,
    env_secret: str | None = None,
) -> dict[str, Any]:
    """The Indexed Job that runs every input of ``manifest`` (see the module)."""
    record = manifest.child_record(0, 0)
    labels = array_labels(manifest)
    args = array_runtime_args(manifest, INDEX_VARIABLE)
    template = pod_template(
        record, options=options or PodOptions(), labels=labels, args=args, command=command,
        env_secret=env_secret,
    )  # fmt: skip
    spec: dict[str, Any] = {
        "completionMode": "Indexed",
        "completions": manifest.total_expected,
        "parallelism": manifest.max_concurrent or manifest.total_expected,
        "backoffLimitPerIndex": _budget(manifest),
        "podFailurePolicy": _retry_rules(manifest),
        "ttlSecondsAfterFinished": ttl_seconds,
        "template": template,
    }
    if manifest.fail_fast:
        spec["maxFailedIndexes"] = 0
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": manifest.array_job,
            "namespace": record.namespace,
            "labels": labels,
            "annotations": {
                "kinetic.dev/func": record.func_name[:250],
                JOB_ID_PREFIX: manifest.job_id_prefix,
            },
        },
        "spec": spec,
    }


def parse_indexes(text: str | None) -> set[int]:
    """The indexes of a Job status interval list, ``"0-3,7"``."""
    found: set[int] = set()
    for part in (text or "").split(","):
        if not part:
            continue
        low, _, high = part.partition("-")
        found.update(range(int(low), int(high or low) + 1))
    return found


def pod_index(pod: Obj) -> int | None:
    value = (pod.get("metadata", {}).get("labels") or {}).get(INDEX_LABEL)
    if value is None:
        value = (pod.get("metadata", {}).get("annotations") or {}).get(INDEX_LABEL)
    if isinstance(value, str) and value.isdigit():
        return int(value)
    return None


def pods_by_index(pods: Iterable[Obj]) -> dict[int, list[Obj]]:
    found: dict[int, list[Obj]] = defaultdict(list)
    for pod in pods:
        index = pod_index(pod)
        if index is not None:
            found[index].append(pod)
    return found


def _newest(pods: Sequence[Obj]) -> Obj | None:
    return max(pods, key=lambda p: p["metadata"].get("creationTimestamp") or "", default=None)


def _job_failure(job: Obj) -> str | None:
    """Why the whole Job failed (fail-fast), or None while it has not."""
    for condition in job.get("status", {}).get("conditions") or []:
        if condition.get("type") in ("Failed", "FailureTarget") and condition.get("status") == (
            "True"
        ):
            reason = condition.get("reason") or "failed"
            return f"{reason}: {condition.get('message') or ''}".rstrip(": ")
    return None


def _ended(pod: Obj, phase: str) -> JobState:
    detail, code = status.terminated_reason(pod)
    if phase == "Succeeded":
        return JobState(status=JobStatus.SUCCEEDED)
    return JobState(
        status=JobStatus.FAILED, detail=detail, exit_code=code, cause=status.termination_cause(pod)
    )


def _index_state(
    index: int,
    pods: list[Obj],
    done: tuple[set[int], set[int], str | None],
    unschedulable_timeout: float,
    now: datetime,
) -> JobState:
    completed, failed, job_failure = done
    newest = _newest(pods)
    if index in completed or index in failed:
        if newest is None:
            # The Job keeps its outcome, but its pods go only with a cleanup of this child.
            return JobState(status=JobStatus.NOT_FOUND, detail="its pod was deleted")
        return _ended(newest, "Succeeded" if index in completed else "Failed")
    phase = (newest or {}).get("status", {}).get("phase")
    if job_failure is not None:
        if newest is not None and phase == "Succeeded":
            return JobState(status=JobStatus.SUCCEEDED)
        return JobState(
            status=JobStatus.FAILED,
            cause=FailureCause.CANCELLED,
            detail=f"the batch's Job stopped every index ({job_failure})",
        )
    return _unfinished_state(newest, unschedulable_timeout, now)


def _unfinished_state(newest: Obj | None, unschedulable_timeout: float, now: datetime) -> JobState:
    """An index the Job has not settled: waiting, running, or about to run again."""
    if newest is None:
        return JobState(status=JobStatus.PENDING, detail="waiting for its pod")
    if newest.get("status", {}).get("phase") == "Failed":
        # Neither completed nor failed: the job controller runs this index again.
        detail, _ = status.terminated_reason(newest)
        return JobState(
            status=JobStatus.PENDING,
            detail=f"{detail}; Kubernetes runs it again in a new pod".lstrip("; "),
        )
    return status.pod_state(newest, unschedulable_timeout, now)


def index_states(
    job: Obj | None,
    pods: Iterable[Obj],
    indexes: Iterable[int],
    *,
    unschedulable_timeout: float,
    now: datetime | None = None,
) -> dict[int, JobState]:
    """The state of each of ``indexes`` of the array Job ``job`` (None: it is gone), from
    the Job's completed and failed index sets and one listing of its pods."""
    wanted = list(indexes)
    if job is None or job.get("metadata", {}).get("deletionTimestamp"):
        return dict.fromkeys(wanted, JobState(status=JobStatus.NOT_FOUND))
    job_status = job.get("status", {})
    done = (
        parse_indexes(job_status.get("completedIndexes")),
        parse_indexes(job_status.get("failedIndexes")),
        _job_failure(job),
    )
    by_index = pods_by_index(pods)
    moment = now or datetime.now(UTC)
    return {
        index: _with_preemptions(
            _index_state(index, by_index.get(index, []), done, unschedulable_timeout, moment),
            by_index.get(index, []),
        )
        for index in wanted
    }


def _with_preemptions(state: JobState, pods: list[Obj]) -> JobState:
    """How many runs of the index the cluster took away (and the Job ran again)."""
    preempted = sum(1 for pod in pods if status.disrupted(pod))
    if state.status is JobStatus.FAILED and preempted:
        preempted -= 1  # the last one was not run again: it failed the index
    return msgspec.structs.replace(state, preemptions=preempted) if preempted else state


def delete_index_pods(connection: ClusterConnection, selector: str) -> list[Obj]:
    """Delete the pods ``selector`` finds (one index's: a cleanup of that child); returns the
    ones that were still there."""
    left = []
    for pod in connection.list_pods(selector):
        left.append(pod)
        with contextlib.suppress(NotFound):
            connection.send(
                f"deleting pod {pod['metadata']['name']}",
                connection.core.delete_namespaced_pod,
                pod["metadata"]["name"],
                connection.namespace,
            )
    return left


def index_job_ids(job: Obj, pods: Iterable[Obj]) -> list[str]:
    """The job ids of an array Job's indexes that still have a pod (an index cleaned up, or
    not started yet, has none), given pods of any Jobs; none for any other Job."""
    prefix = (job.get("metadata", {}).get("annotations") or {}).get(JOB_ID_PREFIX)
    if not prefix or job.get("spec", {}).get("completionMode") != "Indexed":
        return []
    name = job["metadata"].get("name")
    own = [p for p in pods if (p["metadata"].get("labels") or {}).get(JOB_NAME_LABEL) == name]
    return [f"{prefix}-{index}" for index in sorted(pods_by_index(own))]


def index_settled(job: Obj, index: int) -> bool:
    """Whether the Job has recorded the outcome of ``index`` (or stopped every index): its
    pods may go without the index being read as waiting for one."""
    job_status = job.get("status", {})
    done = parse_indexes(job_status.get("completedIndexes")) | parse_indexes(
        job_status.get("failedIndexes")
    )
    return index in done or _job_failure(job) is not None
