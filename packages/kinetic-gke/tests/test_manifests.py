"""The Job a record becomes: valid for the Kubernetes versions GKE runs, placed on the right
nodes, labelled so it can be found, run once, and cleaned up by Kubernetes eventually."""

from typing import Any

import kubernetes_validate
import pytest
from gke_test_support import IMAGE, RecordFactory

from kinetic_gke import job_manifest
from kinetic_gke.labels import group_selector, job_labels, job_selector
from kinetic_gke.manifests import DEFAULT_TTL_SECONDS, RUNTIME_COMMAND, PodOptions
from kinetic_protocol import ConfigError, Mount, parse_accelerator

GKE_VERSIONS = sorted({"1.31", kubernetes_validate.latest_version().rsplit(".", 1)[0]})
"""The oldest minor GKE still offers and the newest schema kubernetes-validate ships."""
ACCELERATORS = ["cpu", "gpu-l4", "gpu-l4-x2", "gpu-a100-x8", "tpu-v5e-8", "tpu-v6e-16"]


def _pod(manifest: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = manifest["spec"]["template"]["spec"]
    return spec


def _container(manifest: dict[str, Any]) -> dict[str, Any]:
    container: dict[str, Any] = _pod(manifest)["containers"][0]
    return container


@pytest.mark.parametrize("version", GKE_VERSIONS)
@pytest.mark.parametrize("accelerator", ACCELERATORS)
@pytest.mark.parametrize("spot", [False, True], ids=["on-demand", "spot"])
def test_every_manifest_is_valid_for_the_kubernetes_versions_gke_runs(
    record: RecordFactory, version: str, accelerator: str, spot: bool
) -> None:
    manifest = job_manifest(
        record(accelerator=accelerator, spot=spot, group_id="grp-0a1b2c3d", group_index=7),
        options=PodOptions(service_account="kinetic-runner"),
    )
    # Strict: an unknown or misplaced field fails like a real API server's decoding would.
    kubernetes_validate.validate(manifest, version, strict=True)


def test_an_invalid_manifest_does_fail_validation(record: RecordFactory) -> None:
    """The check above can fail: a misspelt field is refused."""
    manifest = job_manifest(record())
    _pod(manifest)["restartPolicyy"] = "Never"
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(manifest, GKE_VERSIONS[0], strict=True)


def test_a_cpu_job_requests_cpu_and_memory_and_asks_for_no_special_nodes(
    record: RecordFactory,
) -> None:
    manifest = job_manifest(record(accelerator="cpu"))
    assert _container(manifest)["resources"] == {"requests": {"cpu": "500m", "memory": "1Gi"}}
    assert "nodeSelector" not in _pod(manifest)
    assert "tolerations" not in _pod(manifest)


def test_a_two_gpu_job_asks_for_two_l4s_on_an_l4_node(record: RecordFactory) -> None:
    manifest = job_manifest(record(accelerator="gpu-l4-x2"))
    resources = _container(manifest)["resources"]
    assert resources["limits"] == {"nvidia.com/gpu": "2"}
    # g2-standard-24 behind two L4s: three quarters of its 24 vCPUs and 96 GiB.
    assert resources["requests"] == {"nvidia.com/gpu": "2", "cpu": "18", "memory": "72Gi"}
    assert _pod(manifest)["nodeSelector"] == {"cloud.google.com/gke-accelerator": "nvidia-l4"}
    assert _pod(manifest)["tolerations"] == [
        {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
    ]


def test_a_single_host_tpu_job_asks_for_the_whole_slice(record: RecordFactory) -> None:
    manifest = job_manifest(record(accelerator="tpu-v5e-8"))
    assert _pod(manifest)["nodeSelector"] == {
        "cloud.google.com/gke-tpu-accelerator": "tpu-v5-lite-podslice",
        "cloud.google.com/gke-tpu-topology": "2x4",
        # 2x4 is also a 2-host slice of 4-chip hosts: the machine type tells them apart
        "node.kubernetes.io/instance-type": "ct5lp-hightpu-8t",
    }
    assert _container(manifest)["resources"]["limits"] == {"google.com/tpu": "8"}
    assert _pod(manifest)["tolerations"] == [
        {"key": "google.com/tpu", "operator": "Exists", "effect": "NoSchedule"}
    ]


def test_a_multi_host_tpu_manifest_asks_for_one_hosts_share_of_the_slice(
    record: RecordFactory,
) -> None:
    """tpu-v6e-16 is a 4x4 slice of four hosts with four chips each."""
    accelerator = parse_accelerator("tpu-v6e-16")
    assert (accelerator.hosts, accelerator.chips_per_host) == (4, 4)
    manifest = job_manifest(record(accelerator="tpu-v6e-16"))
    assert _pod(manifest)["nodeSelector"] == {
        "cloud.google.com/gke-tpu-accelerator": "tpu-v6e-slice",
        "cloud.google.com/gke-tpu-topology": "4x4",
        "node.kubernetes.io/instance-type": "ct6e-standard-4t",
    }
    assert _container(manifest)["resources"]["limits"] == {"google.com/tpu": "4"}


def test_spot_selects_spot_nodes_and_tolerates_their_taint(record: RecordFactory) -> None:
    manifest = job_manifest(record(accelerator="gpu-l4", spot=True))
    assert _pod(manifest)["nodeSelector"] == {
        "cloud.google.com/gke-accelerator": "nvidia-l4",
        "cloud.google.com/gke-spot": "true",
    }
    assert {
        "key": "cloud.google.com/gke-spot",
        "operator": "Equal",
        "value": "true",
        "effect": "NoSchedule",
    } in _pod(manifest)["tolerations"]
    on_demand = job_manifest(record(accelerator="gpu-l4"))
    assert "cloud.google.com/gke-spot" not in _pod(on_demand)["nodeSelector"]


def test_the_job_runs_once_and_kubernetes_removes_it_a_finite_time_after_it_ends(
    record: RecordFactory,
) -> None:
    manifest = job_manifest(record())
    assert _pod(manifest)["restartPolicy"] == "Never"
    ttl = manifest["spec"]["ttlSecondsAfterFinished"]
    assert ttl == DEFAULT_TTL_SECONDS
    assert 0 < ttl <= 30 * 24 * 3600
    assert job_manifest(record(), ttl_seconds=60)["spec"]["ttlSecondsAfterFinished"] == 60


@pytest.mark.parametrize("version", GKE_VERSIONS)
def test_only_a_preempted_pod_runs_again_and_only_within_its_budget(
    record: RecordFactory, version: str
) -> None:
    """Kubernetes runs a disrupted pod again up to ``preemption_retries`` times (``Count``
    against ``backoffLimit``, so the budget holds); any non-zero exit fails the Job at once."""
    manifest = job_manifest(record(preemption_retries=2))
    spec = manifest["spec"]
    assert spec["backoffLimit"] == 2
    disrupted = {
        "action": "Count",
        "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}],
    }
    failed = {
        "action": "FailJob",
        "onExitCodes": {"containerName": "kinetic", "operator": "NotIn", "values": [0]},
    }
    # With no deadline, a run that ended as stopped (SIGTERM) was taken away: Kueue preempts
    # by suspending the Job, whose controller deletes the pod with no DisruptionTarget.
    stopped = {
        "action": "Count",
        "onExitCodes": {"containerName": "kinetic", "operator": "In", "values": [143]},
    }
    assert spec["podFailurePolicy"]["rules"] == [disrupted, stopped, failed]
    with_deadline = job_manifest(record(preemption_retries=2, timeout=60))
    assert with_deadline["spec"]["podFailurePolicy"]["rules"] == [disrupted, failed]
    assert job_manifest(record(preemption_retries=0))["spec"]["backoffLimit"] == 0
    kubernetes_validate.validate(manifest, version, strict=True)


@pytest.mark.parametrize("version", GKE_VERSIONS)
def test_a_timeout_is_the_pods_active_deadline_in_whole_seconds(
    record: RecordFactory, version: str
) -> None:
    """The kubelet fails the pod past it and keeps it (and its log), unlike the Job's own
    deadline, whose controller deletes the pods."""
    manifest = job_manifest(record(timeout=90.5))
    assert _pod(manifest)["activeDeadlineSeconds"] == 91
    assert "activeDeadlineSeconds" not in manifest["spec"]
    kubernetes_validate.validate(manifest, version, strict=True)
    assert _pod(job_manifest(record(timeout=0.2)))["activeDeadlineSeconds"] == 1
    assert "activeDeadlineSeconds" not in _pod(job_manifest(record()))


def test_the_runtime_ends_a_stopped_run_itself_before_the_kubelet_kills_it(
    record: RecordFactory,
) -> None:
    """So a pod stopped at its deadline ends as stopped (143), not killed (137, which a Job's
    retry rules take for an out-of-memory kill)."""
    manifest = job_manifest(record(timeout=60))
    env = {item["name"]: item["value"] for item in _container(manifest)["env"]}
    grace = _pod(manifest)["terminationGracePeriodSeconds"]
    assert 0 < float(env["KINETIC_STOP_GRACE"]) < grace


def test_names_namespace_image_and_command_come_from_the_record(record: RecordFactory) -> None:
    job = record("train-20261122-101500-ab12cd3", namespace="research", image_uri=IMAGE)
    manifest = job_manifest(job)
    assert manifest["metadata"]["name"] == "train-20261122-101500-ab12cd3"
    assert manifest["metadata"]["namespace"] == "research"
    container = _container(manifest)
    assert container["image"] == IMAGE
    assert container["command"] == list(RUNTIME_COMMAND)
    assert container["args"] == [
        "--store",
        job.store_uri,
        "--job",
        "train-20261122-101500-ab12cd3",
    ]
    env = {item["name"]: item["value"] for item in container["env"]}
    assert env["KINETIC_STORE"] == job.store_uri
    assert env["KINETIC_JOB_ID"] == job.job_id
    assert env["PYTHONUNBUFFERED"] == "1"


def test_the_service_account_is_set_only_when_given(record: RecordFactory) -> None:
    assert "serviceAccountName" not in _pod(job_manifest(record()))
    manifest = job_manifest(record(), options=PodOptions(service_account="kinetic-runner"))
    assert _pod(manifest)["serviceAccountName"] == "kinetic-runner"


def test_job_and_pods_carry_the_labels_that_find_them(record: RecordFactory) -> None:
    child = record("sq-0a1b2c3d-3-r1", group_id="grp-0a1b2c3d", group_index=3, attempt=1)
    manifest = job_manifest(child)
    expected = {
        "app": "kinetic",
        "kinetic.dev/job-id": "sq-0a1b2c3d-3-r1",
        "kinetic.dev/group-id": "grp-0a1b2c3d",
        "kinetic.dev/group-index": "3",
        "kinetic.dev/attempt": "1",
    }
    assert manifest["metadata"]["labels"] == expected
    assert manifest["spec"]["template"]["metadata"]["labels"] == expected
    single = job_labels(record("add-1"))
    assert single == {"app": "kinetic", "kinetic.dev/job-id": "add-1", "kinetic.dev/attempt": "0"}


def test_selectors_match_a_job_or_a_whole_group() -> None:
    assert job_selector("add-1") == "app=kinetic,kinetic.dev/job-id=add-1"
    assert group_selector("grp-0a1b2c3d") == "app=kinetic,kinetic.dev/group-id=grp-0a1b2c3d"


def test_a_long_function_name_fits_its_annotation(record: RecordFactory) -> None:
    manifest = job_manifest(record(func_name="f" * 1000))
    assert len(manifest["metadata"]["annotations"]["kinetic.dev/func"]) <= 250


@pytest.mark.parametrize("accelerator", ACCELERATORS[1:])
def test_accelerator_pods_request_cpu_and_memory_so_they_are_not_best_effort(
    record: RecordFactory, accelerator: str
) -> None:
    """Only extended resources requested means QoS BestEffort: first evicted, nothing kept."""
    requests = _container(job_manifest(record(accelerator=accelerator)))["resources"]["requests"]
    assert float(requests["cpu"]) >= 1
    assert requests["memory"].endswith("Gi")
    assert int(requests["memory"].removesuffix("Gi")) >= 1


def test_cpu_and_memory_requests_can_be_overridden(record: RecordFactory) -> None:
    manifest = job_manifest(record(accelerator="gpu-l4"), options=PodOptions(cpu="2", memory="6Gi"))
    requests = _container(manifest)["resources"]["requests"]
    assert requests == {"nvidia.com/gpu": "1", "cpu": "2", "memory": "6Gi"}


def test_pods_meet_the_restricted_pod_security_standard(record: RecordFactory) -> None:
    manifest = job_manifest(record(accelerator="gpu-l4"))
    assert _pod(manifest)["securityContext"] == {
        "runAsNonRoot": True,
        "runAsUser": 1000,
        "runAsGroup": 1000,
        "fsGroup": 1000,  # group-owns the mounted signing keys
        "seccompProfile": {"type": "RuntimeDefault"},
    }
    assert _container(manifest)["securityContext"] == {
        "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL"]},
    }


def test_an_image_that_must_run_as_root_can_ask_for_it(record: RecordFactory) -> None:
    manifest = job_manifest(record(), options=PodOptions(run_as_root=True))
    assert "runAsNonRoot" not in _pod(manifest)["securityContext"]
    assert "runAsUser" not in _pod(manifest)["securityContext"]
    assert _container(manifest)["securityContext"]["allowPrivilegeEscalation"] is False


@pytest.mark.parametrize("version", GKE_VERSIONS)
def test_a_debug_job_exposes_the_debugpy_port_and_stays_valid(
    record: RecordFactory, version: str
) -> None:
    manifest = job_manifest(record(debug=True))
    assert _container(manifest)["ports"] == [
        {"containerPort": 5678, "name": "debugpy", "protocol": "TCP"}
    ]
    kubernetes_validate.validate(manifest, version, strict=True)


def test_a_job_that_is_not_debugged_exposes_no_port(record: RecordFactory) -> None:
    assert "ports" not in _container(job_manifest(record()))


MOUNTS = [
    Mount(path="/data", kind="scratch"),
    Mount(path="/kinetic/fuse/1", kind="gcsfuse", bucket="my-bucket", prefix="sets/train"),
    Mount(path="/weights", kind="gcsfuse", bucket="other-bucket"),
]


@pytest.mark.parametrize("version", GKE_VERSIONS)
def test_data_mounts_become_valid_volumes(record: RecordFactory, version: str) -> None:
    manifest = job_manifest(record(mounts=MOUNTS))
    kubernetes_validate.validate(manifest, version, strict=True)
    volumes = {v["name"]: v for v in _pod(manifest)["volumes"]}
    mounted = {
        m["mountPath"]: volumes[m["name"]] | {"readOnly": m["readOnly"]}
        for m in _container(manifest)["volumeMounts"]
    }
    assert mounted["/data"] == {"name": "kinetic-data-0", "emptyDir": {}, "readOnly": False}
    fuse = mounted["/kinetic/fuse/1"]["csi"]
    assert fuse == {
        "driver": "gcsfuse.csi.storage.gke.io",
        "readOnly": True,
        "volumeAttributes": {
            "bucketName": "my-bucket",
            "mountOptions": "implicit-dirs,only-dir=sets/train",
        },
    }
    assert mounted["/weights"]["csi"]["volumeAttributes"]["mountOptions"] == "implicit-dirs"
    assert mounted["/weights"]["readOnly"] is True
    annotations = manifest["spec"]["template"]["metadata"]["annotations"]
    assert annotations == {"gke-gcsfuse/volumes": "true"}, "GKE injects the FUSE sidecar"


def test_a_job_without_data_mounts_only_its_signing_keys_and_no_fuse(record: RecordFactory) -> None:
    manifest = job_manifest(record())
    assert [v["name"] for v in _pod(manifest)["volumes"]] == ["kinetic-signing-keys"]
    assert [m["name"] for m in _container(manifest)["volumeMounts"]] == ["kinetic-signing-keys"]
    assert "annotations" not in manifest["spec"]["template"]["metadata"]


def test_a_single_file_volume_whose_directory_cannot_be_mounted_is_refused(
    record: RecordFactory,
) -> None:
    with pytest.raises(ConfigError, match=r"mount /.*a single file's volume mounts its directory"):
        job_manifest(record(mounts=[Mount(path="/", kind="scratch")]))


@pytest.mark.parametrize("version", GKE_VERSIONS)
def test_captured_variables_come_from_the_jobs_secret_never_the_manifest(
    record: RecordFactory, version: str
) -> None:
    manifest = job_manifest(record(), env_secret="train-abc-env")
    assert _container(manifest)["envFrom"] == [{"secretRef": {"name": "train-abc-env"}}]
    kubernetes_validate.validate(manifest, version, strict=True)
    assert "envFrom" not in _container(job_manifest(record()))


def test_a_job_parsed_where_it_entered_is_not_parsed_again(
    record: RecordFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The backend parses a job's accelerator once, in ``submit``, and hands it down to the
    pod spec; a manifest made from it reads no accelerator name of its own."""
    parsed = parse_accelerator("gpu-l4-x2")

    def no_second_parse(name: str) -> None:
        raise AssertionError(f"{name!r} was parsed again on its way to the pod spec")

    monkeypatch.setattr("kinetic_gke.manifests.parse_accelerator", no_second_parse)
    manifest = job_manifest(record(accelerator="gpu-l4-x2"), accelerator=parsed)
    assert _container(manifest)["resources"]["limits"]["nvidia.com/gpu"] == "2"
