"""The LeaderWorkerSet a multi-host Kinetic job becomes: a pure function of the record.

One group (``replicas: 1``) of ``size`` = host count pods, leader and workers from the same pod
spec as a gke Job's pod. Kubernetes never re-runs the job: the group is not recreated when a
container restarts (``restartPolicy: None``), and a restarted host's runtime waits instead of
running the function again (see ``kinetic_runtime.main``).
"""

import hashlib
from typing import Any

import msgspec

from kinetic_gke.labels import job_labels
from kinetic_gke.manifests import RUNTIME_COMMAND, PodOptions, job_manifest
from kinetic_gke.queueing.admission import queue_labels
from kinetic_protocol import Accelerator, JobRecord, parse_accelerator

__all__ = ["APP", "LWS_GROUP", "MAX_SLICE_NAME", "RUNTIME_COMMAND", "lws_manifest", "slice_record"]

APP = "kinetic-pathways"
"""The ``app`` label of Pathways jobs' objects and pods (the spec's label)."""
LWS_GROUP = "leaderworkerset.x-k8s.io"
EXCLUSIVE_TOPOLOGY = "leaderworkerset.sigs.k8s.io/exclusive-topology"
NODE_POOL_LABEL = "cloud.google.com/gke-nodepool"
"""One slice per node pool: the LWS controller gives a group's pods affinity to their leader's
pool and anti-affinity to other groups, so two slices never half-fill one pool each."""


MAX_SLICE_NAME = 39
"""The longest LeaderWorkerSet name whose derived names fit a label value (63 characters):
Kueue names a slice's Workload ``leaderworkerset-<name>-0-<5 hex>`` and labels its pods with
it (the LWS controller's own revision label allows 52). A longer job id is shortened."""


def slice_record(record: JobRecord) -> JobRecord:
    """``record`` with the name its LeaderWorkerSet has (``k8s_name``): the job id itself
    when it fits :data:`MAX_SLICE_NAME`, else its start and a hash of it, the same every
    time it is asked."""
    name = record.k8s_name
    if len(name) <= MAX_SLICE_NAME:
        return record
    digest = hashlib.sha256(name.encode()).hexdigest()[:7]
    short = f"{name[: MAX_SLICE_NAME - len(digest) - 1].rstrip('-')}-{digest}"
    return msgspec.structs.replace(record, k8s_name=short)


def lws_manifest(
    record: JobRecord,
    *,
    accelerator: Accelerator | None = None,
    version: str = "v1",
    options: PodOptions | None = None,
    command: tuple[str, ...] = RUNTIME_COMMAND,
    env_secret: str | None = None,
) -> dict[str, Any]:
    """A LeaderWorkerSet that runs ``record`` once on every host of its slice (every host's
    pod reads the captured variables from ``env_secret``). ``accelerator``: the record's, as
    the backend parsed it (else parsed here)."""
    accelerator = accelerator or parse_accelerator(record.accelerator)
    hosts = accelerator.hosts
    extra_env = {
        "KINETIC_ENV": "pathways",
        "KINETIC_NUM_HOSTS": str(hosts),
        "KINETIC_SLICE": record.k8s_name,
    }
    if record.timeout is not None:
        # Each host's runtime keeps it: a pod failed past its own activeDeadlineSeconds is
        # replaced by the LeaderWorkerSet, which would read as a lost host.
        extra_env["KINETIC_ATTEMPT_TIMEOUT"] = str(record.timeout)
    job = job_manifest(
        record,
        accelerator=accelerator,
        options=options,
        command=command,
        extra_env=extra_env,
        env_secret=env_secret,
    )
    labels = job_labels(record, app=APP)
    template = job["spec"]["template"]
    template["metadata"]["labels"] = labels
    pod_spec = template["spec"]
    pod_spec["restartPolicy"] = "Always"  # a StatefulSet's pods must; see the module doc
    pod_spec.pop("activeDeadlineSeconds", None)  # the runtime keeps the timeout (above)
    container = pod_spec["containers"][0]
    container["env"].append(
        {"name": "KINETIC_HOST_INSTANCE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.uid"}}}
    )
    # A slice is one Kueue workload, admitted whole: the queue labels go on the set alone.
    metadata = {**job["metadata"], "labels": {**labels, **queue_labels(record)}}
    metadata["annotations"] = {**metadata["annotations"], EXCLUSIVE_TOPOLOGY: NODE_POOL_LABEL}
    return {
        "apiVersion": f"{LWS_GROUP}/{version}",
        "kind": "LeaderWorkerSet",
        "metadata": metadata,
        "spec": {
            "replicas": 1,
            "startupPolicy": "LeaderCreated",
            "leaderWorkerTemplate": {
                "size": hosts,
                "restartPolicy": "None",
                "workerTemplate": template,
            },
        },
    }
