"""A whole batch as one Indexed Job: the Job (how each index's state is read is
:mod:`kinetic_gke.array_states`).

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

import functools
import signal
from typing import Any

from kinetic_gke.k8s.jobs import JobWorkload
from kinetic_gke.labels import APP, ATTEMPT, COMPLETION_INDEX, GROUP_ID, JOB_NAME
from kinetic_gke.manifests import (
    DEFAULT_TTL_SECONDS,
    RUNTIME_COMMAND,
    PodOptions,
    pod_failure_policy,
    pod_template,
)
from kinetic_gke.queueing.admission import queued
from kinetic_protocol import (
    EXIT_PREEMPTIONS_SPENT,
    Accelerator,
    BatchManifest,
    FailureCause,
    RetryRule,
    array_runtime_args,
    parse_accelerator,
)

__all__ = [
    "FAILURE_COUNT",
    "INDEX_LABEL",
    "INDEX_OFFSET",
    "INDEX_VARIABLE",
    "CLEANED_INDEXES",
    "JOBS",
    "JOB_ID_PREFIX",
    "JOB_NAME_LABEL",
    "MAX_INDEXES",
    "array_job_manifest",
    "array_labels",
    "expressible",
    "part_parallelism",
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
CLEANED_INDEXES = "kinetic.dev/cleaned-indexes"
"""Annotation of an array Job: the indexes whose pods a cleanup deleted once they settled (an
interval list, ``"0-3,7"``), so that a poll in any process reads them as gone without listing
pods; the Job's own status still counts them completed or failed."""
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
    FailureCause.TIMEOUT: (4, 128 + signal.SIGTERM),
    FailureCause.PREEMPTED: (EXIT_PREEMPTIONS_SPENT,),
    FailureCause.OOM: (128 + signal.SIGKILL,),
}
"""The exit codes a cause ends a run with, for the retry rules (which see nothing else of a
failed pod but its conditions): ``kinetic_runtime``'s own (the function raised, a phase before
it failed, a ``timeout=`` it kept itself passed, the index's preemptions were spent); a pod
stopped by the kubelet at its ``activeDeadlineSeconds`` (``timeout=``), which sends SIGTERM
and which the runtime then ends as stopped, 143, never 137 (``KINETIC_STOP_GRACE``; a stop
that is a preemption is the disruption rule's, read first); and the kernel's kill of a
container out of memory, 137. Any other non-zero code is cause ``exit``. How the client reads
a run's cause is another matter: from what Kubernetes says of the pod (``DeadlineExceeded``,
``OOMKilled``; :mod:`kinetic_gke.array_states`)."""


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


def _retry_rules(rule: RetryRule) -> dict[str, Any]:
    """The batch's retry rule as the single Job's pod failure policy, with ``FailIndex`` for
    attempts not retried: a preemption runs the index again as the same attempt (its runtime
    ends it once the rule's preemptions are spent), an exit whose cause the rule covers runs
    the next attempt while attempts are left (``backoffLimitPerIndex``), and any other exit
    fails the index. A run that ended as stopped is not taken for a preemption here, as a
    single Job's is (``pod_failure_policy``): deleting one index's pod is how that input is
    cancelled, and the same exit follows."""
    policy = functools.partial(pod_failure_policy, disrupted="Ignore", failed_attempt="FailIndex")
    if not rule.attempts_left(0):
        return policy()
    if rule.covers(FailureCause.EXIT):
        final = sorted(
            code for cause, codes in _EXIT_CODES.items() if not rule.covers(cause) for code in codes
        )
        return policy(final_codes=final)
    retried = [code for cause, codes in _EXIT_CODES.items() if rule.covers(cause) for code in codes]
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
    accelerator: Accelerator | None = None,
    options: PodOptions | None = None,
    ttl_seconds: int = DEFAULT_TTL_SECONDS,
    command: tuple[str, ...] = RUNTIME_COMMAND,
    env_secret: str | None = None,
) -> dict[str, Any]:
    """The Indexed Job that runs the inputs of ``manifest`` that Job ``part`` holds (all of
    them unless the batch is split; see the module). ``accelerator``: the batch's, as the
    backend parsed it (else parsed here)."""
    inputs = manifest.array_part_inputs(part)
    record = manifest.child_record(inputs.start, 0)
    rule = manifest.retry_rule
    labels = array_labels(manifest)
    args = array_runtime_args(manifest, INDEX_VARIABLE, part)
    template = pod_template(
        record,
        accelerator=accelerator or parse_accelerator(record.accelerator),
        options=options or PodOptions(),
        labels=labels,
        args=args,
        command=command,
        env_secret=env_secret,
        extra_env={"KINETIC_PREEMPTION_RETRIES": str(rule.preemption_retries)},
    )
    template["spec"]["containers"][0]["env"] += _attempt_env()
    spec: dict[str, Any] = {
        "completionMode": "Indexed",
        "completions": len(inputs),
        "parallelism": part_parallelism(manifest, part),
        "backoffLimitPerIndex": rule.retries,
        "podFailurePolicy": _retry_rules(rule),
        "ttlSecondsAfterFinished": ttl_seconds,
        "template": template,
    }
    if manifest.fail_fast:
        spec["maxFailedIndexes"] = 0
    job = {
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
    return queued(job, record)
