"""The Kubernetes Job a Kinetic job becomes: a pure function of the record, so it can be
unit-tested and schema-validated without a cluster."""

import math
from dataclasses import dataclass
from typing import Any

from kinetic_gke.k8s.signing import MOUNT_PATH as SIGNING_MOUNT_PATH
from kinetic_gke.k8s.signing import signing_volume
from kinetic_gke.labels import job_labels
from kinetic_gke.scheduling import scheduling_for
from kinetic_gke.volumes import pod_volumes
from kinetic_protocol import DEFAULT_DEBUG_PORT, JobRecord, parse_accelerator, runtime_args

__all__ = [
    "DEFAULT_TTL_SECONDS",
    "NON_ROOT_UID",
    "RUNTIME_COMMAND",
    "PodOptions",
    "job_manifest",
    "pod_failure_policy",
    "security_context",
]

RUNTIME_COMMAND = ("python", "-m", "kinetic_runtime")
DEFAULT_TTL_SECONDS = 7 * 24 * 3600
"""Finished Jobs are kept a week for their logs, then Kubernetes deletes them."""
NON_ROOT_UID = 1000
"""The user pods run as: the `kinetic` user of the images Kinetic builds."""


@dataclass(frozen=True)
class PodOptions:
    """Per-cluster choices about the pods, the same for every job."""

    service_account: str | None = None
    run_as_root: bool = False
    """For an image that must run as root; such pods are refused where the namespace
    enforces the `restricted` Pod Security Standard."""
    cpu: str | None = None
    memory: str | None = None


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


def pod_failure_policy() -> dict[str, Any]:
    """Let Kubernetes itself run a preempted attempt again, so no client needs to be alive.

    A pod the cluster took away (``DisruptionTarget``: spot reclaim or node shutdown,
    eviction, preemption by the scheduler, a lost node) counts against ``backoffLimit``, which
    is the job's ``preemption_retries``; the job controller starts a new pod of the same Job
    (same job id, same ``KINETIC_OUTPUT_DIR``). Any other failure, a non-zero exit of the
    container (the function raised, out of memory, past its deadline), fails the Job at once:
    those are Kinetic's to judge, never retried by Kubernetes. ``Count``, not ``Ignore``, so
    the budget holds: ``Ignore`` would run a job that is preempted again and again forever.
    """
    return {
        "rules": [
            {
                "action": "Count",
                "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}],
            },
            {
                "action": "FailJob",
                "onExitCodes": {"containerName": "kinetic", "operator": "NotIn", "values": [0]},
            },
        ]
    }


def job_manifest(
    record: JobRecord,
    *,
    options: PodOptions | None = None,
    ttl_seconds: int = DEFAULT_TTL_SECONDS,
    command: tuple[str, ...] = RUNTIME_COMMAND,
    extra_env: dict[str, str] | None = None,
    env_secret: str | None = None,
) -> dict[str, Any]:
    """A batch/v1 Job that runs ``record``: once, or again in a new pod after a preemption
    (see :func:`pod_failure_policy`); a batch's ``retries`` are Kinetic's, not the Job's.

    ``env_secret`` names the Secret holding the job's captured variables (their values never
    appear in the manifest); Kinetic's own variables take precedence over them."""
    options = options or PodOptions()
    placed = scheduling_for(
        parse_accelerator(record.accelerator),
        spot=record.spot,
        cpu=options.cpu,
        memory=options.memory,
    )
    pod_security, container_security = security_context(options)
    labels = job_labels(record)
    env = {
        "KINETIC_STORE": record.store_uri,
        "KINETIC_JOB_ID": record.job_id,
        "KINETIC_ENV": "gke",
        "KINETIC_SIGNING_KEYS": SIGNING_MOUNT_PATH,
        "PYTHONUNBUFFERED": "1",
        **(extra_env or {}),
    }
    container: dict[str, Any] = {
        "name": "kinetic",
        "image": record.image_uri,
        "command": list(command),
        "args": runtime_args(record),
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
        "terminationGracePeriodSeconds": 30,
        "securityContext": pod_security,
    }
    if placed.node_selector:
        pod_spec["nodeSelector"] = placed.node_selector
    if placed.tolerations:
        pod_spec["tolerations"] = placed.tolerations
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
    return {
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
            "podFailurePolicy": pod_failure_policy(),
            "ttlSecondsAfterFinished": ttl_seconds,
            "template": {"metadata": template_metadata, "spec": pod_spec},
        },
    }
