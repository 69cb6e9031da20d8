"""The Kubernetes Job a Kinetic job becomes: a pure function of the record, so it can be
unit-tested and schema-validated without a cluster."""

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from kinetic_gke.choices import job_placement
from kinetic_gke.k8s.signing import MOUNT_PATH as SIGNING_MOUNT_PATH
from kinetic_gke.k8s.signing import signing_volume
from kinetic_gke.labels import job_labels
from kinetic_gke.queueing.admission import queued
from kinetic_gke.status import STOPPED_EXIT
from kinetic_gke.volumes import pod_volumes
from kinetic_protocol import (
    DEFAULT_DEBUG_PORT,
    Accelerator,
    JobRecord,
    parse_accelerator,
    runtime_args,
)
from kinetic_protocol.slices import REPLACED_EXIT

__all__ = [
    "DEFAULT_TTL_SECONDS",
    "NON_ROOT_UID",
    "RUNTIME_COMMAND",
    "GroupPorts",
    "PodOptions",
    "job_manifest",
    "pod_failure_policy",
    "pod_template",
    "security_context",
]

RUNTIME_COMMAND = ("python", "-m", "kinetic_runtime")
DEFAULT_TTL_SECONDS = 7 * 24 * 3600
"""Finished Jobs are kept a week for their logs, then Kubernetes deletes them."""
NON_ROOT_UID = 1000
"""The user pods run as: the `kinetic` user of the images Kinetic builds."""
TERMINATION_GRACE_SECONDS = 30
"""How long a pod told to stop (past its deadline, preempted, deleted) has before the
kubelet kills it: time for a function that catches SIGTERM to save a checkpoint."""
STOP_GRACE_SECONDS = TERMINATION_GRACE_SECONDS - 5
"""``KINETIC_STOP_GRACE``: the runtime ends a stopped run itself this long after SIGTERM, so
it ends as stopped (143) and never by the kubelet's kill (137, an out-of-memory kill's code
to a Job's retry rules; see ``kinetic_gke.arrays``)."""


@dataclass(frozen=True)
class GroupPorts:
    """Host 0's ports in a job of several hosts, where the defaults (8476, 29500, 8080) will
    not do: pods that share one network, as on the test control plane, where two groups at
    once would both listen on them."""

    coordinator: int
    """JAX's coordinator."""
    torch: int
    """PyTorch's rendezvous (``MASTER_PORT``)."""
    megascale: int
    """JAX multislice's coordinator (``MEGASCALE_PORT``)."""


@dataclass(frozen=True)
class PodOptions:
    """Per-cluster choices about the pods, the same for every job."""

    service_account: str | None = None
    run_as_root: bool = False
    """For an image that must run as root; such pods are refused where the namespace
    enforces the `restricted` Pod Security Standard."""
    cpu: str | None = None
    memory: str | None = None
    group_ports: GroupPorts | None = None
    """Host 0's ports in a job of several hosts; None: the defaults, each pod having a
    network of its own."""


def security_context(options: PodOptions) -> tuple[dict[str, Any], dict[str, Any]]:
    """(pod, container) security contexts that meet the `restricted` Pod Security Standard."""
    pod: dict[str, Any] = {"seccompProfile": {"type": "RuntimeDefault"}}
    if not options.run_as_root:
        pod |= {
            "runAsNonRoot": True,
            "runAsUser": NON_ROOT_UID,
            "runAsGroup": NON_ROOT_UID,
            "fsGroup": NON_ROOT_UID,  # group-owns the mounted signing keys (see k8s.signing)
        }
    container = {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}
    return pod, container


_DISRUPTED = {"type": "DisruptionTarget", "status": "True"}


def pod_failure_policy(
    *,
    disrupted: str = "Count",
    failed_attempt: str = "FailJob",
    retried_codes: Sequence[int] = (),
    final_codes: Sequence[int] | None = None,
    stopped_is_disruption: bool = False,
    replaced_is_disruption: bool = False,
) -> dict[str, Any]:
    """Let Kubernetes itself run a preempted attempt again, so no client needs to be alive.

    A pod the cluster took away (``DisruptionTarget``: spot reclaim or node shutdown,
    eviction, preemption by the scheduler, a lost node) counts against the Job's budget
    (``backoffLimit``; per index in an array, ``backoffLimitPerIndex``); the job controller
    starts a new pod with the same job id and ``KINETIC_OUTPUT_DIR``. Any other non-zero exit
    (the function raised, out of memory, past its deadline) ends the attempt for good with
    ``failed_attempt`` (``FailJob``; ``FailIndex`` for one index of an array), unless its
    exit code is one of ``retried_codes``, which count against the budget too (an array's
    ``retries``). ``final_codes`` instead: only those end it, every other code counts.
    ``Count``, not ``Ignore``, so the budget holds: ``Ignore`` would run a job that is
    preempted again and again forever (an array's indexes take ``disrupted="Ignore"``: their
    runtime keeps that budget, see :mod:`kinetic_gke.arrays`).

    ``stopped_is_disruption`` (a run with no ``timeout=``, so no deadline of its pod stops
    it): a run that ended as stopped (SIGTERM, :data:`STOPPED_EXIT`) was taken away too. Kueue
    preempts by suspending the Job, whose controller then deletes its pods with no
    ``DisruptionTarget``; when the stopped pod's exit reaches the controller before it has
    counted the deletion, the exit-code rule would otherwise fail the Job for good.

    ``replaced_is_disruption`` (a group of hosts): a host that found its run started before in
    another pod (:data:`REPLACED_EXIT`) was taken away too. Kueue's preemption suspends a
    JobSet and its readmission starts every host again in new pods of the same run; only a
    new run of the whole group may go on.
    """
    rules: list[dict[str, Any]] = [{"action": disrupted, "onPodConditions": [dict(_DISRUPTED)]}]
    codes = [STOPPED_EXIT] if stopped_is_disruption else []
    codes += [REPLACED_EXIT] if replaced_is_disruption else []
    if codes:
        taken = {"containerName": "kinetic", "operator": "In", "values": sorted(codes)}
        rules.append({"action": disrupted, "onExitCodes": taken})
    if final_codes is None:
        exits = {"operator": "NotIn", "values": sorted({0, *retried_codes})}
    else:
        exits = {"operator": "In", "values": sorted(set(final_codes) - {0})}
    if exits["values"] or exits["operator"] == "NotIn":
        exits = {"containerName": "kinetic", **exits}
        rules.append({"action": failed_attempt, "onExitCodes": exits})
    return {"rules": rules}


def pod_template(
    record: JobRecord,
    *,
    accelerator: Accelerator,
    options: PodOptions,
    labels: dict[str, str],
    args: list[str],
    command: tuple[str, ...] = RUNTIME_COMMAND,
    extra_env: dict[str, str] | None = None,
    env_secret: str | None = None,
) -> dict[str, Any]:
    """The pod every attempt of ``record`` runs in (one job's, or every index's of an array),
    on ``accelerator`` (the record's, parsed once where the job entered the backend), or on
    whichever of its choices of accelerator and capacity its queue gives it
    (:mod:`kinetic_gke.choices`).

        ``env_secret`` names the Secret holding the job's captured variables (their values never
        appear in the manifest); Kinetic's own variables take precedence over them."""
    pod_placement = job_placement(record, accelerator, cpu=options.cpu, memory=options.memory)
    placed = pod_placement.scheduling
    pod_security, container_security = security_context(options)
    env = {
        "KINETIC_STORE": record.store_uri,
        "KINETIC_JOB_ID": record.job_id,
        "KINETIC_ENV": "gke",
        "KINETIC_SIGNING_KEYS": SIGNING_MOUNT_PATH,
        "KINETIC_STOP_GRACE": str(STOP_GRACE_SECONDS),
        "PYTHONUNBUFFERED": "1",
        **(extra_env or {}),
    }
    if record.in_array:
        del env["KINETIC_JOB_ID"]  # each index's is its own; the runtime sets it from --job
    container: dict[str, Any] = {
        "name": "kinetic",
        "image": record.image_uri,
        "command": list(command),
        "args": args,
        "env": [{"name": name, "value": value} for name, value in env.items()],
        "resources": {"limits": placed.limits, "requests": placed.requests},
        "securityContext": container_security,
    }
    if env_secret:
        container["envFrom"] = [{"secretRef": {"name": env_secret}}]
    if not placed.limits:
        del container["resources"]["limits"]
    volumes, volume_mounts, pod_annotations = pod_volumes(record.mounts)
    signing_keys, signing_mount = signing_volume()
    volumes, volume_mounts = [*volumes, signing_keys], [*volume_mounts, signing_mount]
    container["volumeMounts"] = volume_mounts
    if record.debug:  # the runtime's debugpy server; the client reaches it by port-forward
        container["ports"] = [
            {"containerPort": DEFAULT_DEBUG_PORT, "name": "debugpy", "protocol": "TCP"}
        ]
    pod_spec: dict[str, Any] = {
        "restartPolicy": "Never",
        "containers": [container],
        "terminationGracePeriodSeconds": TERMINATION_GRACE_SECONDS,
        "securityContext": pod_security,
    }
    if placed.node_selector:
        pod_spec["nodeSelector"] = placed.node_selector
    if placed.tolerations:
        pod_spec["tolerations"] = placed.tolerations
    if pod_placement.affinity:
        pod_spec["affinity"] = pod_placement.affinity
    if options.service_account:
        pod_spec["serviceAccountName"] = options.service_account
    if record.timeout is not None:
        # The kubelet fails the pod past it (reason DeadlineExceeded) and keeps it, with its
        # log: the attempt's timeout, counted from when the pod starts on its node.
        pod_spec["activeDeadlineSeconds"] = max(1, math.ceil(record.timeout))
    pod_spec["volumes"] = volumes
    template_metadata: dict[str, Any] = {"labels": labels}
    if pod_annotations:
        template_metadata["annotations"] = pod_annotations
    return {"metadata": template_metadata, "spec": pod_spec}


def job_manifest(
    record: JobRecord,
    *,
    accelerator: Accelerator | None = None,
    options: PodOptions | None = None,
    ttl_seconds: int = DEFAULT_TTL_SECONDS,
    command: tuple[str, ...] = RUNTIME_COMMAND,
    extra_env: dict[str, str] | None = None,
    env_secret: str | None = None,
) -> dict[str, Any]:
    """A batch/v1 Job that runs ``record``: once, or again in a new pod after a preemption
    (see :func:`pod_failure_policy`); a per-child batch's ``retries`` are Kinetic's, not the
    Job's (an array batch's are the Job's: :mod:`kinetic_gke.arrays`). ``accelerator``: the
    record's, as the backend parsed it (else parsed here)."""
    labels = job_labels(record)
    template = pod_template(
        record,
        accelerator=accelerator or parse_accelerator(record.accelerator),
        options=options or PodOptions(),
        labels=labels,
        args=runtime_args(record),
        command=command,
        extra_env=extra_env,
        env_secret=env_secret,
    )
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": record.k8s_name,
            "namespace": record.namespace,
            "labels": labels,
            "annotations": {"kinetic.dev/func": record.func_name[:250]},
        },
        "spec": {
            "backoffLimit": record.preemption_retries,
            "podFailurePolicy": pod_failure_policy(stopped_is_disruption=record.timeout is None),
            "ttlSecondsAfterFinished": ttl_seconds,
            "template": template,
        },
    }
    return queued(job, record)
