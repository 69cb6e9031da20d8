"""A whole batch as one Indexed Job: its manifest, and each index's state read off the Job.

Input ``i`` of the batch is completion index ``i``: its pod's hostname, and its Kinetic job id,
is ``<job_id_prefix>-<i>``, its runtime reads input ``i`` of the stored batch, and it stores
its result under that job id, so each index is a Kinetic job like any other. The job controller
does what a per-child batch's submitter does: it keeps ``max_concurrent`` indexes running
(``parallelism``), runs a failed index again within the batch's ``retries``
(``backoffLimitPerIndex``, by the pod failure policy that a single Job has too) and, with
fail-fast, fails the Job at the first failed index (``maxFailedIndexes: 0``), stopping the
rest. Nothing of it needs a client alive.

Each run of an index is told its attempt by the Job's per-index failure counts, which the job
controller writes on every pod it creates and the pod passes to the runtime (the downward
API): a run after ``n`` counted failures is attempt ``n``, job id ``<prefix>-<i>-r<n>``, as a
per-child batch names its retries (:mod:`kinetic_runtime.attempts`). A preempted run is not
counted (``Ignore``): it runs again as the same attempt, and the runtime ends the index once
the runs the cluster took away pass the job's ``preemption_retries``.
"""

import contextlib
import functools
from collections import defaultdict
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from typing import Any

import msgspec

from kinetic_gke import status
from kinetic_gke.k8s.connection import ClusterConnection, Obj
from kinetic_gke.k8s.errors import NotFound
from kinetic_gke.k8s.jobs import JobWorkload
from kinetic_gke.labels import APP, ATTEMPT, COMPLETION_INDEX, GROUP_ID, JOB_NAME
from kinetic_gke.manifests import (
    DEFAULT_TTL_SECONDS,
    RUNTIME_COMMAND,
    PodOptions,
    pod_failure_policy,
    pod_template,
)
from kinetic_protocol import (
    EXIT_PREEMPTIONS_SPENT,
    BatchManifest,
    FailureCause,
    JobState,
    JobStatus,
    array_runtime_args,
)
from kinetic_protocol.causes import retry_causes

__all__ = [
    "INDEX_LABEL",
    "INDEX_OFFSET",
    "INDEX_VARIABLE",
    "JOBS",
    "JOB_ID_PREFIX",
    "MAX_INDEXES",
    "array_job_manifest",
    "array_labels",
    "delete_index_pods",
    "expressible",
    "attempt_states",
    "index_job_ids",
    "index_settled",
    "parse_indexes",
    "pods_by_job",
    "part_parallelism",
    "pod_attempt",
]

INDEX_LABEL = COMPLETION_INDEX
INDEX_VARIABLE = "JOB_COMPLETION_INDEX"
"""The variable the job controller sets in each container of an Indexed Job: its index."""
JOB_NAME_LABEL = JOB_NAME
"""The label the job controller puts on each pod of a Job: the Job's name."""
JOB_ID_PREFIX = "kinetic.dev/job-id-prefix"
"""Annotation of an array Job: its indexes' job ids are ``<prefix>-<index>``."""
JOBS = JobWorkload()
"""Array Jobs are Jobs, whatever workload a backend's single jobs are."""
INDEX_OFFSET = "kinetic.dev/index-offset"
"""Annotation of a batch's later array Job (a batch split into several): the input its index
0 holds. Absent: 0."""
MAX_INDEXES = 100_000
"""The most completions an Indexed Job with a per-index backoff limit may have."""
FAILURE_COUNT = "batch.kubernetes.io/job-index-failure-count"
"""Annotation the job controller puts on each pod of a Job with ``backoffLimitPerIndex``: how
many earlier pods of its index failed and were counted (the run's attempt)."""
IGNORED_COUNT = "batch.kubernetes.io/job-index-ignored-failure-count"
"""Its sibling: how many earlier pods of the index failed by a rule that ``Ignore``s them (a
preemption); absent while there were none."""
_ATTEMPT_ENV = {
    "KINETIC_INDEX_FAILURES": FAILURE_COUNT,
    "KINETIC_INDEX_PREEMPTIONS": IGNORED_COUNT,
}
_EXIT_CODES = {
    FailureCause.USER: (1,),
    FailureCause.INFRASTRUCTURE: (2,),
    FailureCause.TIMEOUT: (4,),
    FailureCause.PREEMPTED: (EXIT_PREEMPTIONS_SPENT,),
    FailureCause.OOM: (137,),
}
"""The exit codes that name a cause: ``kinetic_runtime``'s own (the function raised, a phase
before it failed, its ``timeout=`` passed, the index's preemptions were spent) and the
kernel's kill of a container out of memory. Any other non-zero code is cause ``exit``."""


def expressible(manifest: BatchManifest) -> bool:
    """Whether the Job API says what the batch asks for. Not: fail-fast that lets running
    children finish (``maxFailedIndexes`` stops every index), fail-fast over a batch split
    into several Jobs (one Job's failed index cannot stop another Job), and a part of more
    inputs than one Job holds; such a batch takes the per-child path."""
    if manifest.fail_fast and (not manifest.cancel_running_on_fail or manifest.array_parts > 1):
        return False
    largest = len(manifest.array_part_inputs(0))
    return 0 < largest <= MAX_INDEXES


def part_parallelism(manifest: BatchManifest, part: int) -> int:
    """How many indexes of Job ``part`` run at once: ``max_concurrent`` shared evenly
    between the batch's Jobs (at least one each), or all of them without a limit."""
    size = len(manifest.array_part_inputs(part))
    if manifest.max_concurrent is None:
        return size
    return min(size, max(1, manifest.max_concurrent // manifest.array_parts))


def array_labels(manifest: BatchManifest, app: str = "kinetic") -> dict[str, str]:
    """The labels of the Job and of each of its pods: the batch's, not any one child's."""
    return {APP: app, GROUP_ID: manifest.group_id, ATTEMPT: "0"}


def _retry_rules(manifest: BatchManifest) -> dict[str, Any]:
    """The single Job's pod failure policy, with ``FailIndex`` for attempts not retried: a
    preemption, and an exit whose cause ``retry_on`` names while ``retries`` remain, run the
    index again; any other exit fails the index."""
    policy = functools.partial(pod_failure_policy, disrupted="Ignore", failed_attempt="FailIndex")
    if manifest.retries == 0:
        return policy()
    causes = retry_causes(manifest.retry_on)
    if FailureCause.EXIT in causes:
        final = sorted(
            code for cause, codes in _EXIT_CODES.items() if cause not in causes for code in codes
        )
        return policy(final_codes=final)
    retried = [code for cause in causes for code in _EXIT_CODES.get(cause, ())]
    return policy(retried_codes=retried)


def _attempt_env() -> list[dict[str, Any]]:
    """The variables that tell each run its attempt, from its pod's failure counts."""
    return [
        {
            "name": name,
            "valueFrom": {"fieldRef": {"fieldPath": f"metadata.annotations['{annotation}']"}},
        }
        for name, annotation in _ATTEMPT_ENV.items()
    ]


def array_job_manifest(
    manifest: BatchManifest,
    part: int = 0,
    *,
    options: PodOptions | None = None,
    ttl_seconds: int = DEFAULT_TTL_SECONDS,
    command: tuple[str, ...] = RUNTIME_COMMAND,
    env_secret: str | None = None,
) -> dict[str, Any]:
    """The Indexed Job that runs the inputs of ``manifest`` that Job ``part`` holds (all of
    them unless the batch is split; see the module)."""
    inputs = manifest.array_part_inputs(part)
    record = manifest.child_record(inputs.start, 0)
    labels = array_labels(manifest)
    args = array_runtime_args(manifest, INDEX_VARIABLE, part)
    template = pod_template(
        record, options=options or PodOptions(), labels=labels, args=args, command=command,
        env_secret=env_secret,
        extra_env={"KINETIC_PREEMPTION_RETRIES": str(record.preemption_retries)},
    )  # fmt: skip
    template["spec"]["containers"][0]["env"] += _attempt_env()
    spec: dict[str, Any] = {
        "completionMode": "Indexed",
        "completions": len(inputs),
        "parallelism": part_parallelism(manifest, part),
        "backoffLimitPerIndex": manifest.retries,
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
            "name": manifest.array_part_name(part),
            "namespace": record.namespace,
            "labels": labels,
            "annotations": {
                "kinetic.dev/func": record.func_name[:250],
                JOB_ID_PREFIX: manifest.job_id_prefix,
                **({INDEX_OFFSET: str(inputs.start)} if inputs.start else {}),
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


def pods_by_job(pods: Iterable[Obj]) -> dict[str, list[Obj]]:
    """Pods by the name of the Job that made them (a split batch's Jobs share its labels)."""
    found: dict[str, list[Obj]] = defaultdict(list)
    for pod in pods:
        found[(pod["metadata"].get("labels") or {}).get(JOB_NAME_LABEL, "")].append(pod)
    return found


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


def pod_attempt(pod: Obj) -> int:
    """The attempt a pod of an array Job runs: its index's counted failures before it."""
    value = (pod.get("metadata", {}).get("annotations") or {}).get(FAILURE_COUNT, "0")
    return int(value) if isinstance(value, str) and value.isdigit() else 0


def _exit_code(pod: Obj) -> int | None:
    for container in pod.get("status", {}).get("containerStatuses") or []:
        code = ((container.get("state") or {}).get("terminated") or {}).get("exitCode")
        if isinstance(code, int):
            return code
    return None


def _ended(pod: Obj, phase: str) -> JobState:
    detail, code = status.terminated_reason(pod)
    if phase == "Succeeded":
        return JobState(status=JobStatus.SUCCEEDED)
    if _exit_code(pod) == EXIT_PREEMPTIONS_SPENT:
        return JobState(
            status=JobStatus.FAILED, exit_code=EXIT_PREEMPTIONS_SPENT,
            cause=FailureCause.PREEMPTED,
            detail="preempted more often than its preemption_retries allow",
        )  # fmt: skip
    return JobState(
        status=JobStatus.FAILED, detail=detail, exit_code=code, cause=status.termination_cause(pod)
    )


def _index_state(
    index: int,
    newest: Obj | None,
    done: tuple[set[int], set[int], str | None],
    unschedulable_timeout: float,
    now: datetime,
) -> JobState:
    completed, failed, job_failure = done
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


def _followed(newest: Obj | None, latest: int) -> JobState:
    """An attempt the Job has run again as attempt ``latest``: it failed."""
    if newest is not None and newest.get("status", {}).get("phase") == "Failed":
        ended = _ended(newest, "Failed")
    else:
        ended = JobState(status=JobStatus.FAILED, detail="its pod failed")
    return msgspec.structs.replace(ended, next_attempt=latest)


class _IndexPods:
    """One Job's pods grouped once: by ``(index, attempt)``, and each index's latest attempt."""

    def __init__(self, pods: Iterable[Obj]) -> None:
        self.by_attempt: dict[tuple[int, int], list[Obj]] = defaultdict(list)
        self.latest: dict[int, int] = {}
        for pod in pods:
            index = pod_index(pod)
            if index is None:
                continue
            attempt = pod_attempt(pod)
            self.by_attempt[index, attempt].append(pod)
            if attempt > self.latest.get(index, -1):
                self.latest[index] = attempt


def attempt_states(
    job: Obj | None,
    pods: Iterable[Obj],
    attempts: Iterable[tuple[int, int]],
    *,
    unschedulable_timeout: float,
    now: datetime | None = None,
) -> dict[tuple[int, int], JobState]:
    """The state of each ``(index, attempt)`` of the array Job ``job`` (None: it is gone),
    from the Job's completed and failed index sets and one listing of its pods. An attempt
    whose index has a later attempt's pod failed, and names it (``next_attempt``)."""
    wanted = list(attempts)
    if job is None or job.get("metadata", {}).get("deletionTimestamp"):
        return dict.fromkeys(wanted, JobState(status=JobStatus.NOT_FOUND))
    job_status = job.get("status", {})
    done = (
        parse_indexes(job_status.get("completedIndexes")),
        parse_indexes(job_status.get("failedIndexes")),
        _job_failure(job),
    )
    grouped = _IndexPods(pods)
    moment = now or datetime.now(UTC)
    found: dict[tuple[int, int], JobState] = {}
    for index, attempt in wanted:
        own = grouped.by_attempt.get((index, attempt), [])
        newest = own[0] if len(own) == 1 else _newest(own)
        latest = grouped.latest.get(index, 0)
        if latest > attempt:
            state = _followed(newest, latest)
        else:
            state = _index_state(index, newest, done, unschedulable_timeout, moment)
        found[index, attempt] = _with_preemptions(state, own, newest) if len(own) > 1 else state
    return found


def _with_preemptions(state: JobState, pods: list[Obj], newest: Obj | None) -> JobState:
    """How many runs of the attempt the cluster took away and the Job ran again (not a run
    that only found the attempt's preemptions spent)."""
    preempted = sum(1 for pod in pods if pod is not newest and status.disrupted(pod))
    if newest is not None and _exit_code(newest) == EXIT_PREEMPTIONS_SPENT:
        preempted -= 1  # the last preemption was not run again: it ended the index
    return msgspec.structs.replace(state, preemptions=preempted) if preempted > 0 else state


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
    """The job ids of an array Job's attempts that still have a pod (an index cleaned up, or
    not started yet, has none), given pods of any Jobs; none for any other Job."""
    annotations = job.get("metadata", {}).get("annotations") or {}
    prefix = annotations.get(JOB_ID_PREFIX)
    if not prefix or job.get("spec", {}).get("completionMode") != "Indexed":
        return []
    offset = int(annotations.get(INDEX_OFFSET) or 0)
    name = job["metadata"].get("name")
    own = [p for p in pods if (p["metadata"].get("labels") or {}).get(JOB_NAME_LABEL) == name]
    attempts = {
        (offset + index, pod_attempt(pod))
        for index, pods_of in pods_by_index(own).items()
        for pod in pods_of
    }
    return [
        f"{prefix}-{index}" + (f"-r{attempt}" if attempt else "")
        for index, attempt in sorted(attempts)
    ]


def index_settled(job: Obj, index: int) -> bool:
    """Whether the Job has recorded the outcome of ``index`` (or stopped every index): its
    pods may go without the index being read as waiting for one."""
    job_status = job.get("status", {})
    done = parse_indexes(job_status.get("completedIndexes")) | parse_indexes(
        job_status.get("failedIndexes")
    )
    return index in done or _job_failure(job) is not None
