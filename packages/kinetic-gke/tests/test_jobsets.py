"""The JobSet a job on several hosts becomes: one Indexed Job per slice (a GPU job's nodes are
one slice), each host told where it stands from its own labels, the whole group run again only
when the cluster took a host away, and names short enough for everything derived from them."""

import re
from typing import Any

import kubernetes_validate
import pytest
from gke_test_support import RecordFactory

from kinetic_gke.jobsets import (
    COORDINATOR_PORT,
    EXCLUSIVE_TOPOLOGY,
    NODE_POOL_LABEL,
    HostGroup,
    group_record,
    jobset_manifest,
    jobset_name,
)
from kinetic_gke.k8s.kueue_api import PRIORITY_LABEL, QUEUE_LABEL
from kinetic_gke.labels import JOB_ID
from kinetic_gke.manifests import GroupPorts, PodOptions
from kinetic_protocol import ConfigError, JobRecord, parse_accelerator

GKE_VERSIONS = sorted({"1.31", kubernetes_validate.latest_version().rsplit(".", 1)[0]})
Obj = dict[str, Any]


def _jobset(record: JobRecord, accelerator: str, **shape: int) -> tuple[Obj, HostGroup]:
    parsed = parse_accelerator(accelerator)
    group = HostGroup.of(parsed, **shape)
    return jobset_manifest(group_record(record, group), group, accelerator=parsed), group


def _slice_job(jobset: Obj) -> Obj:
    (replicated,) = jobset["spec"]["replicatedJobs"]
    return dict(replicated)


def _container(jobset: Obj) -> Obj:
    container: Obj = _slice_job(jobset)["template"]["spec"]["template"]["spec"]["containers"][0]
    return container


def _host_env(jobset: Obj, slice_index: int, host: int) -> dict[str, str]:
    """A host's variables as the kubelet resolves them from the labels JobSet and the job
    controller give its pod."""
    labels = {
        "jobset.sigs.k8s.io/job-global-index": str(slice_index),
        "batch.kubernetes.io/job-completion-index": str(host),
        "jobset.sigs.k8s.io/restart-attempt": "0",
    }
    env = {}
    for item in _container(jobset)["env"]:
        if "value" in item:
            env[item["name"]] = item["value"]
            continue
        path = item["valueFrom"]["fieldRef"]["fieldPath"]
        label = re.fullmatch(r"metadata\.labels\['(.+)'\]", path)
        env[item["name"]] = labels[label.group(1)] if label else f"<{path}>"
    return env


@pytest.mark.parametrize("version", GKE_VERSIONS)
@pytest.mark.parametrize(
    ("accelerator", "shape"),
    [("gpu-h100-x8", {"nodes": 2}), ("cpu", {"nodes": 3}), ("tpu-v5e-16", {"slices": 2})],
)
def test_each_slices_job_is_a_valid_job_for_the_kubernetes_versions_gke_runs(
    record: RecordFactory, version: str, accelerator: str, shape: dict[str, int]
) -> None:
    """The JobSet's own fields are checked by the API server in the real-plane tests; the Job
    it replicates is checked here, strictly, as a batch/v1 Job."""
    jobset, _ = _jobset(record(timeout=60, debug=True), accelerator, **shape)
    job = {"apiVersion": "batch/v1", "kind": "Job", **_slice_job(jobset)["template"]}
    job["metadata"] = {**job["metadata"], "name": "slice"}
    kubernetes_validate.validate(job, version, strict=True)


def test_a_two_node_gpu_job_is_one_indexed_job_of_two_hosts_alone_in_a_node_pool(
    record: RecordFactory,
) -> None:
    jobset, group = _jobset(record(accelerator="gpu-h100-x8"), "gpu-h100-x8", nodes=2)
    assert (group.slices, group.hosts_per_slice, group.hosts) == (1, 2, 2)
    assert jobset["apiVersion"] == "jobset.x-k8s.io/v1alpha2"
    assert jobset["metadata"]["annotations"][EXCLUSIVE_TOPOLOGY] == NODE_POOL_LABEL
    replicated = _slice_job(jobset)
    assert (replicated["name"], replicated["replicas"]) == ("node", 1)
    spec = replicated["template"]["spec"]
    assert (spec["completionMode"], spec["completions"], spec["parallelism"]) == ("Indexed", 2, 2)
    pod = spec["template"]["spec"]
    assert pod["nodeSelector"] == {"cloud.google.com/gke-accelerator": "nvidia-h100-80gb"}
    assert _container(jobset)["resources"]["limits"] == {"nvidia.com/gpu": "8"}
    assert jobset["spec"]["network"] == {
        "enableDNSHostnames": True,
        "publishNotReadyAddresses": True,
    }
    assert jobset["spec"]["successPolicy"] == {"operator": "All"}


def test_a_two_slice_tpu_job_is_a_job_per_slice_of_the_shapes_hosts(
    record: RecordFactory,
) -> None:
    jobset, group = _jobset(record(accelerator="tpu-v5e-16"), "tpu-v5e-16", slices=2)
    assert (group.slices, group.hosts_per_slice, group.hosts) == (2, 4, 8)
    replicated = _slice_job(jobset)
    assert (replicated["name"], replicated["replicas"]) == ("slice", 2)
    spec = replicated["template"]["spec"]
    assert (spec["completions"], spec["parallelism"]) == (4, 4)
    selector = spec["template"]["spec"]["nodeSelector"]
    assert selector["cloud.google.com/gke-tpu-topology"] == "4x4"
    assert _container(jobset)["resources"]["limits"] == {"google.com/tpu": "4"}


@pytest.mark.parametrize(
    ("accelerator", "shape", "replicated"),
    [("gpu-l4", {"nodes": 3}, "node"), ("tpu-v5e-16", {"slices": 2}, "slice")],
)
def test_every_host_knows_its_place_and_host_zeros_stable_name(
    record: RecordFactory, accelerator: str, shape: dict[str, int], replicated: str
) -> None:
    """Hosts are numbered slice by slice (the runtime's slice x hosts per slice + host in
    slice) and all name host 0's DNS name under the set, which JobSet's headless service
    answers: ``<set>-<replicated job>-0-0.<set>``."""
    jobset, group = _jobset(record(accelerator=accelerator), accelerator, **shape)
    name = jobset["metadata"]["name"]
    places = set()
    for slice_index in range(group.slices):
        for host in range(group.hosts_per_slice):
            env = _host_env(jobset, slice_index, host)
            assert env["KINETIC_NUM_HOSTS"] == str(group.hosts)
            assert env["KINETIC_NUM_SLICES"] == str(group.slices)
            assert env["KINETIC_COORDINATOR_ADDRESS"] == (
                f"{name}-{replicated}-0-0.{name}:{COORDINATOR_PORT}"
            )
            assert env["KINETIC_HOST_INSTANCE"] == "<metadata.uid>"
            assert env["KINETIC_RESTART_ATTEMPT"] == "0"
            per_slice = group.hosts // int(env["KINETIC_NUM_SLICES"])
            index = int(env["KINETIC_SLICE_INDEX"]) * per_slice + int(
                env["KINETIC_SLICE_HOST_INDEX"]
            )
            if group.slices == 1:
                assert env["KINETIC_HOST_INDEX"] == str(index)
            else:  # the downward API cannot add: the runtime does
                assert "KINETIC_HOST_INDEX" not in env
            places.add(index)
    assert places == set(range(group.hosts))


def test_host_zeros_ports_are_the_runtimes_defaults_unless_the_backend_names_others(
    record: RecordFactory,
) -> None:
    """On GKE each pod has a network of its own, so the defaults serve every job; pods that
    share one (the test control plane) are given ports of their own."""
    group = HostGroup.of(parse_accelerator("cpu"), nodes=2)
    job = group_record(record(), group)
    default = _host_env(jobset_manifest(job, group, accelerator=parse_accelerator("cpu")), 0, 1)
    assert default["KINETIC_COORDINATOR_ADDRESS"].endswith(f":{COORDINATOR_PORT}")
    assert "KINETIC_TORCH_PORT" not in default and "KINETIC_MEGASCALE_PORT" not in default
    options = PodOptions(group_ports=GroupPorts(coordinator=4001, torch=4002, megascale=4003))
    named = jobset_manifest(job, group, accelerator=parse_accelerator("cpu"), options=options)
    env = _host_env(named, 0, 1)
    assert env["KINETIC_COORDINATOR_ADDRESS"] == f"{job.k8s_name}-node-0-0.{job.k8s_name}:4001"
    assert (env["KINETIC_TORCH_PORT"], env["KINETIC_MEGASCALE_PORT"]) == ("4002", "4003")


def test_the_group_runs_again_only_when_the_cluster_took_a_host_away(
    record: RecordFactory,
) -> None:
    """A host's Job fails at its first failed pod, naming the pod failure policy rule that
    matched; JobSet restarts the group (within preemption_retries) for the rules that mean
    taken away, or a pod lost without a word, and fails it for anything else. Taken away:
    disrupted; started again in a new pod of its run (exit 3: Kueue readmitted the set after
    preempting it); and, in a run with no deadline of its own, stopped (143)."""
    for timeout, codes in ((None, [3, 143]), (60.0, [3])):
        jobset, _ = _jobset(record(preemption_retries=2, timeout=timeout), "gpu-l4", nodes=2)
        job = _slice_job(jobset)["template"]["spec"]
        assert job["backoffLimit"] == 0
        rules = job["podFailurePolicy"]["rules"]
        assert rules[1]["onExitCodes"] == {
            "containerName": "kinetic",
            "operator": "In",
            "values": codes,
        }
        taken_away = [0, 1]
        assert {rule["action"] for rule in rules} == {"FailJob"}
        policy = jobset["spec"]["failurePolicy"]
        assert policy["maxRestarts"] == 2
        preempted, lost, failed = policy["rules"]
        assert (preempted["action"], preempted["onJobFailureReasons"]) == (
            "RestartJobSet",
            ["PodFailurePolicy"],
        )
        (pattern,) = preempted["onJobFailureMessagePatterns"]
        for index in range(len(rules)):
            # The job controller's messages (k8s.io/kubernetes pkg/controller/job).
            messages = [
                f"Pod ns/p has condition DisruptionTarget matching FailJob rule at index {index}",
                f"Container kinetic for pod ns/p failed with exit code 1 matching FailJob "
                f"rule at index {index}",
            ]
            for message in messages:
                assert bool(re.search(pattern, message)) is (index in taken_away), message
        assert lost == {
            "name": "PodLost",
            "action": "RestartJobSet",
            "onJobFailureReasons": ["BackoffLimitExceeded"],
        }
        assert failed == {"name": "Failed", "action": "FailJobSet"}  # matches any failure


def test_a_timeout_is_each_hosts_deadline_per_run_of_the_group(record: RecordFactory) -> None:
    """JobSet v1alpha2 has no deadline of its own; each host's pod keeps the single Job's."""
    jobset, _ = _jobset(record(timeout=90.5), "gpu-l4", nodes=2)
    assert _slice_job(jobset)["template"]["spec"]["template"]["spec"]["activeDeadlineSeconds"] == 91
    assert "activeDeadlineSeconds" not in _slice_job(jobset)["template"]["spec"]
    untimed, _ = _jobset(record(), "gpu-l4", nodes=2)
    assert (
        "activeDeadlineSeconds" not in _slice_job(untimed)["template"]["spec"]["template"]["spec"]
    )


def test_the_set_alone_is_queued_and_every_object_carries_the_job_id(
    record: RecordFactory,
) -> None:
    """Kueue admits the set as one workload, all hosts or none: a labelled Job or pod would be
    a workload of its own."""
    jobset, _ = _jobset(record("train-1", queue="team-a", priority="high"), "gpu-l4", nodes=2)
    labels = jobset["metadata"]["labels"]
    assert (labels[QUEUE_LABEL], labels[PRIORITY_LABEL], labels[JOB_ID]) == (
        "team-a",
        "high",
        "train-1",
    )
    assert jobset["spec"]["suspend"] is True
    slice_job = _slice_job(jobset)["template"]
    for labelled in (slice_job["metadata"], slice_job["spec"]["template"]["metadata"]):
        assert labelled["labels"][JOB_ID] == "train-1"
        assert QUEUE_LABEL not in labelled["labels"]
    unqueued, _ = _jobset(record("train-1"), "gpu-l4", nodes=2)
    assert "suspend" not in unqueued["spec"]
    assert QUEUE_LABEL not in unqueued["metadata"]["labels"]


def test_captured_variables_come_from_the_jobs_secret(record: RecordFactory) -> None:
    parsed = parse_accelerator("gpu-l4")
    group = HostGroup.of(parsed, nodes=2)
    jobset = jobset_manifest(record(), group, accelerator=parsed, env_secret="job-1-env")
    assert _container(jobset)["envFrom"] == [{"secretRef": {"name": "job-1-env"}}]


def test_a_long_job_id_is_shortened_so_every_derived_name_fits() -> None:
    """Pods are ``<set>-<replicated job>-<slice>-<host>-<5 random>`` (a DNS label, 63 at most)
    and Kueue's Workload ``jobset-<set>-<5 hex>`` labels them (63): the name is cut and
    hashed, the same every time; a short one is kept."""
    long_id = "a-very-long-function-name-for-training-20261128-161000-1a2b3c4"
    for group in (HostGroup(slices=1, hosts_per_slice=2, tpu=False), HostGroup(12, 16, True)):
        name = jobset_name(long_id, group)
        assert name == jobset_name(long_id, group)
        assert name != jobset_name(long_id + "x", group)
        pod = f"{group.host_name(name, group.slices - 1, group.hosts_per_slice - 1)}-abcde"
        assert len(pod) <= 63
        assert len(f"jobset-{name}-abcde") <= 63
        assert re.fullmatch(r"[a-z]([-a-z0-9]*[a-z0-9])?", name)
    assert jobset_name("train-1", HostGroup(1, 2, False)) == "train-1"


def test_a_name_too_long_for_its_pods_is_refused(record: RecordFactory) -> None:
    parsed = parse_accelerator("gpu-l4")
    group = HostGroup.of(parsed, nodes=2)
    with pytest.raises(ConfigError, match="cannot name a JobSet"):
        jobset_manifest(record("x" * 60), group, accelerator=parsed)


@pytest.mark.parametrize(
    ("accelerator", "shape", "rule"),
    [
        ("gpu-l4", {"slices": 2}, "needs a TPU accelerator"),
        ("tpu-v5e-16", {"nodes": 2}, "pass slices=2"),
        ("cpu", {"nodes": 0}, "must be 1 or more"),
    ],
)
def test_a_shape_that_means_nothing_is_refused_naming_the_rule(
    accelerator: str, shape: dict[str, int], rule: str
) -> None:
    with pytest.raises(ConfigError, match=rule):
        HostGroup.of(parse_accelerator(accelerator), **shape)
