"""The JobSet a job on several hosts becomes (``nodes=`` GPU nodes, ``slices=`` TPU slices):
a pure function of the record, so it can be unit-tested without a cluster.

One Indexed Job per slice, each of its hosts one pod (a GPU job is one "slice" of ``nodes``
hosts), replicated by the JobSet, which gives every pod a stable DNS name
(``<set>-<replicated job>-<slice>-<host>.<set>``) through its headless service. Every pod
has the same spec as a single-host Job's; where it stands in the group comes from the labels
JobSet and the job controller put on it, through the downward API (see
:func:`host_environment`).

A host the cluster takes away (preempted, evicted, node lost) fails its Job, and the JobSet
runs the whole group again, within the job's ``preemption_retries`` (``maxRestarts``); any
other failure (the function raised, out of memory, past its timeout) fails the group for good,
as it fails a single Job: Kinetic's own retries decide what runs next.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Any

import msgspec

from kinetic_gke.labels import job_labels
from kinetic_gke.manifests import (
    DEFAULT_TTL_SECONDS,
    RUNTIME_COMMAND,
    GroupPorts,
    PodOptions,
    pod_failure_policy,
    pod_template,
)
from kinetic_gke.queueing.admission import queued
from kinetic_protocol import Accelerator, ConfigError, JobRecord, runtime_args
from kinetic_protocol.host_groups import COORDINATOR_PORT, check_host_groups

__all__ = [
    "COORDINATOR_PORT",
    "EXCLUSIVE_TOPOLOGY",
    "GLOBAL_INDEX",
    "JOBSET_API",
    "JOBSET_GROUP",
    "JOBSET_VERSION",
    "NODE_POOL_LABEL",
    "RESTART_ATTEMPT",
    "HostGroup",
    "group_record",
    "host_environment",
    "jobset_manifest",
    "jobset_name",
]

JOBSET_GROUP = "jobset.x-k8s.io"
JOBSET_VERSION = "v1alpha2"
JOBSET_API = f"{JOBSET_GROUP}/{JOBSET_VERSION}"
GLOBAL_INDEX = "jobset.sigs.k8s.io/job-global-index"
"""On each pod (label): the index of its Job across the set, which is its slice."""
RESTART_ATTEMPT = "jobset.sigs.k8s.io/restart-attempt"
"""On each pod (label): how many times the JobSet had run the group again when it made it."""
COMPLETION_INDEX = "batch.kubernetes.io/job-completion-index"
"""On each pod (label): its index in its Job, which is its host in the slice."""
EXCLUSIVE_TOPOLOGY = "alpha.jobset.sigs.k8s.io/exclusive-topology"
NODE_POOL_LABEL = "cloud.google.com/gke-nodepool"
"""Each Job (a slice, or a GPU job's nodes) in a node pool of its own: JobSet gives its pods
affinity to one pool and keeps every other Job out of it."""

_MAX_POD_NAME = 63
_POD_SUFFIX = "-abcde"
"""The random suffix the job controller adds to a pod's name (JobSet's webhook counts it)."""

_PREEMPTED_RULE = "Preempted"
_LOST_RULE = "PodLost"
_FAILED_RULE = "Failed"


@dataclass(frozen=True)
class HostGroup:
    """The hosts of one job: ``slices`` Jobs of ``hosts_per_slice`` pods each."""

    slices: int
    hosts_per_slice: int
    tpu: bool

    @classmethod
    def of(cls, accelerator: Accelerator, *, nodes: int = 1, slices: int = 1) -> HostGroup:
        """The group ``nodes`` hosts of a GPU (or CPU) shape, or ``slices`` slices of a TPU
        shape, make; a combination that means nothing is refused as at decoration."""
        check_host_groups(accelerator, nodes, slices)
        if accelerator.category == "tpu":
            return cls(slices=slices, hosts_per_slice=accelerator.hosts, tpu=True)
        return cls(slices=1, hosts_per_slice=nodes, tpu=False)

    @property
    def hosts(self) -> int:
        return self.slices * self.hosts_per_slice

    @property
    def replicated_job(self) -> str:
        """The name of the set's one replicated job: it is in every host's name."""
        return "slice" if self.tpu else "node"

    def host_name(self, set_name: str, slice_index: int, host: int) -> str:
        """The stable host name JobSet gives a host's pod (its DNS label under the set)."""
        return f"{set_name}-{self.replicated_job}-{slice_index}-{host}"


def jobset_name(k8s_name: str, group: HostGroup) -> str:
    """The set's name for a job named ``k8s_name``: itself when every name derived from it
    fits (pods, their host names; Kueue's Workload ``jobset-<name>-<5 hex>``, a label value,
    then fits too), else its start and a hash of it, the
    same every time."""
    longest = len(group.host_name("", group.slices - 1, group.hosts_per_slice - 1))
    limit = _MAX_POD_NAME - len(_POD_SUFFIX) - longest  # below Kueue's 50 for its Workload
    if len(k8s_name) <= limit:
        return k8s_name
    digest = hashlib.sha256(k8s_name.encode()).hexdigest()[:7]
    return f"{k8s_name[: limit - len(digest) - 1].rstrip('-')}-{digest}"


def group_record(record: JobRecord, group: HostGroup) -> JobRecord:
    """``record`` with the name its JobSet has (``k8s_name``), for every way in."""
    name = jobset_name(record.k8s_name, group)
    return record if name == record.k8s_name else msgspec.structs.replace(record, k8s_name=name)


def _label(key: str) -> dict[str, Any]:
    return {"valueFrom": {"fieldRef": {"fieldPath": f"metadata.labels['{key}']"}}}


def host_environment(
    set_name: str, group: HostGroup, ports: GroupPorts | None = None
) -> tuple[dict[str, str], list[dict[str, Any]]]:
    """What tells each host where it stands: (the same values for every host, the variables
    read from the pod's own labels).

    ``KINETIC_NUM_HOSTS`` hosts in all, in ``KINETIC_NUM_SLICES`` slices; this host is
    ``KINETIC_SLICE_HOST_INDEX`` of slice ``KINETIC_SLICE_INDEX`` (its Job's global index),
    which the runtime makes host ``slice x hosts per slice + host in slice`` of the group
    (``kinetic_runtime.host_place``; set as ``KINETIC_HOST_INDEX`` too where there is one
    slice, since the downward API cannot add). Host 0's stable name is the coordinator;
    ``KINETIC_RESTART_ATTEMPT`` says which run of the group this is. Host 0's servers take
    the runtime's default ports unless ``ports`` names others.
    """
    host0 = f"{group.host_name(set_name, 0, 0)}.{set_name}"
    coordinator_port = COORDINATOR_PORT if ports is None else ports.coordinator
    values = {
        "KINETIC_NUM_HOSTS": str(group.hosts),
        "KINETIC_NUM_SLICES": str(group.slices),
        "KINETIC_COORDINATOR_ADDRESS": f"{host0}:{coordinator_port}",
    }
    if ports is not None:
        values |= {
            "KINETIC_TORCH_PORT": str(ports.torch),
            "KINETIC_MEGASCALE_PORT": str(ports.megascale),
        }
    from_labels = [
        {"name": "KINETIC_SLICE_INDEX", **_label(GLOBAL_INDEX)},
        {"name": "KINETIC_SLICE_HOST_INDEX", **_label(COMPLETION_INDEX)},
        {"name": "KINETIC_RESTART_ATTEMPT", **_label(RESTART_ATTEMPT)},
        {"name": "KINETIC_HOST_INSTANCE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.uid"}}},
    ]
    if group.slices == 1:
        from_labels.append({"name": "KINETIC_HOST_INDEX", **_label(COMPLETION_INDEX)})
    return values, from_labels


def _failure_policy(record: JobRecord, host_policy: dict[str, Any]) -> dict[str, Any]:
    """Run the group again when a host was taken away, within ``preemption_retries``; fail it
    on anything else. A host's Job fails at its first failed pod (``backoffLimit: 0``, every
    rule ``FailJob``), saying which of its pod failure policy's rules matched: the rules from
    ``disrupted`` are the cluster's doing. A pod gone without a word (its node lost) leaves
    the Job past its backoff limit."""
    disruptions = [
        str(index)
        for index, rule in enumerate(host_policy["rules"])
        if "onPodConditions" in rule or rule["onExitCodes"]["operator"] == "In"
    ]
    taken_away = f"matching FailJob rule at index ({'|'.join(disruptions)})$"
    return {
        "maxRestarts": record.preemption_retries,
        "rules": [
            {
                "name": _PREEMPTED_RULE,
                "action": "RestartJobSet",
                "onJobFailureReasons": ["PodFailurePolicy"],
                "onJobFailureMessagePatterns": [taken_away],
            },
            {
                "name": _LOST_RULE,
                "action": "RestartJobSet",
                "onJobFailureReasons": ["BackoffLimitExceeded"],
            },
            {"name": _FAILED_RULE, "action": "FailJobSet"},
        ],
    }


def jobset_manifest(
    record: JobRecord,
    group: HostGroup,
    *,
    accelerator: Accelerator,
    options: PodOptions | None = None,
    ttl_seconds: int = DEFAULT_TTL_SECONDS,
    command: tuple[str, ...] = RUNTIME_COMMAND,
    env_secret: str | None = None,
) -> dict[str, Any]:
    """A jobset.x-k8s.io/v1alpha2 JobSet that runs ``record`` once on every host of
    ``group`` (``accelerator``: one host's shape, the record's as the backend parsed it).
    ``record.k8s_name`` is the set's name (see :func:`group_record`)."""
    name = record.k8s_name
    if not re.fullmatch(r"[a-z]([-a-z0-9]*[a-z0-9])?", name) or name != jobset_name(name, group):
        raise ConfigError(
            f"{name!r} cannot name a JobSet of {group.hosts} hosts: it must be a DNS-1035 "
            f"label short enough for its pods' names (use jobset_name)."
        )
    labels = job_labels(record)
    options = options or PodOptions()
    values, from_labels = host_environment(name, group, options.group_ports)
    template = pod_template(
        record,
        accelerator=accelerator,
        options=options,
        labels=dict(labels),
        args=runtime_args(record),
        command=command,
        extra_env=values,
        env_secret=env_secret,
    )
    template["spec"]["containers"][0]["env"].extend(from_labels)
    # Kueue's preemption stops a run by suspending the set: only a run with no deadline of
    # its own can end as stopped, which then reads as taken away too, as does every host of
    # the readmitted set finding its run started before (see pod_failure_policy).
    host_policy = pod_failure_policy(
        disrupted="FailJob",
        stopped_is_disruption=record.timeout is None,
        replaced_is_disruption=True,
    )
    slice_job = {
        "metadata": {"labels": dict(labels)},
        "spec": {
            "completionMode": "Indexed",
            "completions": group.hosts_per_slice,
            "parallelism": group.hosts_per_slice,
            "backoffLimit": 0,
            "podFailurePolicy": host_policy,
            "template": template,
        },
    }
    jobset = {
        "apiVersion": JOBSET_API,
        "kind": "JobSet",
        "metadata": {
            "name": name,
            "namespace": record.namespace,
            "labels": dict(labels),
            "annotations": {
                "kinetic.dev/func": record.func_name[:250],
                EXCLUSIVE_TOPOLOGY: NODE_POOL_LABEL,
            },
        },
        "spec": {
            "replicatedJobs": [
                {"name": group.replicated_job, "replicas": group.slices, "template": slice_job}
            ],
            "network": {"enableDNSHostnames": True, "publishNotReadyAddresses": True},
            "successPolicy": {"operator": "All"},
            "failurePolicy": _failure_policy(record, host_policy),
            "ttlSecondsAfterFinished": ttl_seconds,
        },
    }
    return queued(jobset, record)
