"""The LeaderWorkerSet a multi-host record becomes (pure; no cluster)."""

import msgspec

from kinetic_pathways import PathwaysBackend, lws_manifest
from kinetic_protocol import DEFAULT_DEBUG_PORT, JobRecord, Mount

RECORD = JobRecord(
    job_id="job-1",
    backend="pathways",
    project="p",
    cluster_name="c",
    zone="us-central2-b",
    namespace="team",
    bucket_name="bucket",
    k8s_name="kinetic-job-1",
    image_uri="img:1",
    accelerator="tpu-v5e-16",
    func_name="train",
    display_name="train",
    created_at="2026-11-24T00:00:00+00:00",
)


def test_one_group_of_host_count_pods_never_recreated_by_kubernetes() -> None:
    body = lws_manifest(RECORD)
    spec = body["spec"]
    assert body["apiVersion"] == "leaderworkerset.x-k8s.io/v1"
    assert spec["replicas"] == 1
    assert spec["leaderWorkerTemplate"]["size"] == 4
    assert spec["leaderWorkerTemplate"]["restartPolicy"] == "None"
    assert "leaderTemplate" not in spec["leaderWorkerTemplate"]  # leader = workers' spec


def test_each_host_asks_for_its_share_of_the_slice_and_knows_the_host_count() -> None:
    template = lws_manifest(RECORD)["spec"]["leaderWorkerTemplate"]["workerTemplate"]
    container = template["spec"]["containers"][0]
    assert container["resources"]["limits"]["google.com/tpu"] == "4"
    selector = template["spec"]["nodeSelector"]
    assert selector["cloud.google.com/gke-tpu-topology"] == "4x4"
    env = {e["name"]: e.get("value", e.get("valueFrom")) for e in container["env"]}
    assert env["KINETIC_NUM_HOSTS"] == "4"
    assert env["KINETIC_ENV"] == "pathways"
    assert env["KINETIC_HOST_INSTANCE"] == {"fieldRef": {"fieldPath": "metadata.uid"}}


def test_a_timeout_is_kept_by_each_hosts_runtime_not_by_the_pod() -> None:
    """A pod failed past its own activeDeadlineSeconds would be replaced by the set (read as
    a lost host); each host's runtime ends its run instead."""
    timed = msgspec.structs.replace(RECORD, timeout=90.5)
    template = lws_manifest(timed)["spec"]["leaderWorkerTemplate"]["workerTemplate"]
    assert "activeDeadlineSeconds" not in template["spec"]
    env = {e["name"]: e.get("value") for e in template["spec"]["containers"][0]["env"]}
    assert env["KINETIC_ATTEMPT_TIMEOUT"] == "90.5"
    untimed = lws_manifest(RECORD)["spec"]["leaderWorkerTemplate"]["workerTemplate"]
    assert "KINETIC_ATTEMPT_TIMEOUT" not in {
        e["name"] for e in untimed["spec"]["containers"][0]["env"]
    }


def test_labels_let_list_jobs_find_the_set_and_its_pods() -> None:
    body = lws_manifest(msgspec.structs.replace(RECORD, group_id="g1", group_index=3))
    template = body["spec"]["leaderWorkerTemplate"]["workerTemplate"]
    for labels in (body["metadata"]["labels"], template["metadata"]["labels"]):
        assert labels["app"] == "kinetic-pathways"
        assert labels["kinetic.dev/job-id"] == "job-1"
        assert labels["kinetic.dev/group-id"] == "g1"


def test_discovered_version_is_used() -> None:
    assert lws_manifest(RECORD, version="v2")["apiVersion"] == "leaderworkerset.x-k8s.io/v2"


def test_every_host_gets_the_jobs_data_mounts_and_the_fuse_annotation() -> None:
    mounts = [
        Mount(path="/data", kind="scratch"),
        Mount(path="/kinetic/fuse/0", kind="gcsfuse", bucket="b", prefix="sets"),
    ]
    body = lws_manifest(msgspec.structs.replace(RECORD, mounts=mounts))
    template = body["spec"]["leaderWorkerTemplate"]["workerTemplate"]
    assert template["metadata"]["annotations"] == {"gke-gcsfuse/volumes": "true"}
    assert template["metadata"]["labels"]["app"] == "kinetic-pathways"
    paths = [m["mountPath"] for m in template["spec"]["containers"][0]["volumeMounts"]]
    assert paths == ["/data", "/kinetic/fuse/0", "/var/run/kinetic/signing-keys"]
    assert [sorted(v) for v in template["spec"]["volumes"]] == [
        ["emptyDir", "name"],
        ["csi", "name"],
        ["name", "secret"],
    ]


def test_a_debug_job_declares_the_debug_port_the_backend_forwards_to() -> None:
    """The client gives the job a server on every interface of its pod (not the pod's
    loopback) only for a backend that forwards the port; the leader's pod declares it."""
    assert PathwaysBackend.capabilities.debug_port_forward
    debug = lws_manifest(msgspec.structs.replace(RECORD, debug=True))
    container = debug["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"][0]
    assert container["ports"] == [
        {"containerPort": DEFAULT_DEBUG_PORT, "name": "debugpy", "protocol": "TCP"}
    ]


def test_a_long_job_id_names_its_slice_short_enough_for_kueue_and_the_same_each_time() -> None:
    from kinetic_pathways.manifest import MAX_SLICE_NAME, slice_record

    long = msgspec.structs.replace(
        RECORD, job_id="spawn-child-and-hold-20261128-114107-8b56c06",
        k8s_name="spawn-child-and-hold-20261128-114107-8b56c06",
    )  # fmt: skip
    named = slice_record(long)
    assert len(named.k8s_name) <= MAX_SLICE_NAME
    assert named.k8s_name.startswith("spawn-child-and-hold-2026")
    assert slice_record(long) == named and slice_record(named) == named
    assert named.job_id == long.job_id, "only the object's name changes"
    # Kueue's Workload name for the slice, and the label it puts on its pods, fit 63.
    assert len(f"leaderworkerset-{named.k8s_name}-0-abcde") <= 63
    short = RECORD
    assert slice_record(short) is short
