"""`kinetic up`, `pool add`, `status` and `down` with the real Google client libraries (REST)
against the in-process fakes, fake-gcs-server for the bucket, and the real control plane for
the in-cluster objects."""

import json
import os
import re
from pathlib import Path

import pytest
from provision_support import PROJECT, ZONE, Invoke, mutations
from provision_support import ok as _ok

from kinetic_testing.controlplane.cluster import ControlPlane
from kinetic_testing.gcp_fake import FakeGoogleCloud

pytestmark = [pytest.mark.realk8s, pytest.mark.gcs]


def test_up_from_nothing_builds_everything_then_up_again_changes_nothing(
    up_env: FakeGoogleCloud,
    kinetic: Invoke,
    real_k8s: ControlPlane,
    k8s_namespace: str,
    cluster_name: str,
) -> None:
    dry = _ok(kinetic("up", "--dry-run"))
    assert "Dry run: nothing was changed." in dry
    assert up_env.apis.enabled == {} and mutations(up_env.calls) == []
    # The APIs are off, so nothing else can be read yet; the plan still shows every step.
    for line in (
        "+ enable 7 APIs",
        "+ create service account kn-",
        f"+ create cluster {cluster_name} ({ZONE})",
        f"+ create bucket gs://{PROJECT}-kinetic-{cluster_name}",
        "+ create Artifact Registry repository kinetic",
        f"+ grant Workload Identity: {k8s_namespace}/default",
        f"+ create Kubernetes service account {k8s_namespace}/default",
        f"+ grant Role {k8s_namespace}/kinetic-slice-release for {k8s_namespace}/default",
        "+ install LeaderWorkerSet v0.8.0",
        "7 APIs are off",
    ):
        assert line in dry, line

    out = _ok(kinetic("up"))
    assert "Done." in out
    cluster = up_env.container.cluster(PROJECT, ZONE, cluster_name)
    assert cluster is not None and cluster["status"] == "RUNNING"
    assert cluster["workloadIdentityConfig"]["workloadPool"] == f"{PROJECT}.svc.id.goog"
    assert cluster["addonsConfig"]["gcsFuseCsiDriverConfig"]["enabled"] is True
    assert cluster["autoscaling"]["enableNodeAutoprovisioning"] is True
    assert (
        cluster["releaseChannel"]["channel"] == 2
    )  # REGULAR (the REST transport sends enums as numbers)
    assert cluster["nodePools"][0]["config"]["machineType"] == "e2-standard-4"
    assert len(up_env.apis.service_accounts) == 3
    assert any(r.endswith("/repositories/kinetic") for r in up_env.apis.repositories)
    ksa = real_k8s.request("GET", f"/api/v1/namespaces/{k8s_namespace}/serviceaccounts/default")
    jobs_account = next(e for e in up_env.apis.service_accounts if "-jobs@" in e)
    assert ksa["metadata"]["annotations"]["iam.gke.io/gcp-service-account"] == jobs_account
    wi = up_env.apis.sa_policies[jobs_account]["bindings"]
    assert wi == [{
        "role": "roles/iam.workloadIdentityUser",
        "members": [f"serviceAccount:{PROJECT}.svc.id.goog[{k8s_namespace}/default]"],
    }]  # fmt: skip
    assert "LeaderWorkerSet API served" in out
    rbac = f"/apis/rbac.authorization.k8s.io/v1/namespaces/{k8s_namespace}"
    binding = real_k8s.request("GET", f"{rbac}/rolebindings/kinetic-slice-release")
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": "default", "namespace": k8s_namespace}
    ]
    role = real_k8s.request("GET", f"{rbac}/roles/kinetic-slice-release")
    assert {"apiGroups": ["leaderworkerset.x-k8s.io"], "resources": ["leaderworkersets"],
            "verbs": ["get", "patch"]} in role["rules"]  # fmt: skip

    assert not Path(os.environ["KUBECONFIG"]).exists()  # reached without it, none written

    calls_before = len(up_env.calls)
    again = _ok(kinetic("up"))
    assert "Nothing to do: everything is in place." in again
    assert mutations(up_env.calls[calls_before:]) == []
    profiles = json.loads(Path(os.environ["KINETIC_PROFILES_FILE"]).read_text())
    assert profiles["active"] == cluster_name
    profile = profiles["profiles"][cluster_name]
    assert profile["project"] == PROJECT
    build_account = next(e for e in up_env.apis.service_accounts if "-build@" in e)
    assert profile["build_service_account"] == build_account


def test_pool_add_gpu_and_multi_host_tpu_then_status_and_down(
    up_env: FakeGoogleCloud, kinetic: Invoke, cluster_name: str
) -> None:
    _ok(kinetic("up"))
    gpu = _ok(kinetic("pool", "add", "--accelerator", "gpu-l4-x2", "--max-nodes", "4", "--spot"))
    assert "create node pool kinetic-gpu-l4-x2-spot" in gpu
    tpu = _ok(kinetic("pool", "add", "--accelerator", "tpu-v5litepod-2x4"))
    assert "2 hosts, compact placement" in tpu
    pools = {
        p["name"]: p for p in up_env.container.cluster(PROJECT, ZONE, cluster_name)["nodePools"]
    }
    l4 = pools["kinetic-gpu-l4-x2-spot"]
    assert l4["config"]["machineType"] == "g2-standard-24"
    assert l4["config"]["accelerators"][0]["acceleratorType"] == "nvidia-l4"
    assert l4["config"]["accelerators"][0]["acceleratorCount"] == "2"
    assert l4["config"]["spot"] is True
    assert l4["config"]["taints"] == [
        {"key": "cloud.google.com/gke-spot", "value": "true", "effect": 1}  # NO_SCHEDULE
    ]
    slice_pool = pools["kinetic-tpu-v5e-8-multihost"]
    assert slice_pool["config"]["machineType"] == "ct5lp-hightpu-4t"
    assert slice_pool["placementPolicy"] == {"type": 1, "tpuTopology": "2x4"}  # COMPACT
    assert slice_pool["autoscaling"]["maxNodeCount"] == 2
    again = _ok(kinetic("pool", "add", "--accelerator", "tpu-v5litepod-2x4"))
    assert "exists" in again and up_env.count("container.nodePools.create") == 2

    status = json.loads(_ok(kinetic("status", "--json")))
    assert status["cluster"]["status"] == "RUNNING"
    assert status["bucket"]["exists"] and status["registry"]["exists"]
    shown = {p["name"]: p for p in status["cluster"]["pools"]}
    assert shown["kinetic-gpu-l4-x2-spot"]["accelerator"] == "2 x nvidia-l4"
    assert shown["kinetic-gpu-l4-x2-spot"]["spot"] is True
    assert shown["kinetic-gpu-l4-x2-spot"]["capacity"] == "spot"
    assert status["lws"].startswith("installed")
    assert status["jobset"] == "installed (API v1alpha2)"
    assert "job(s) running" in status["running"]
    # The session's Kueue, and the namespace's queue (the session's, kept as it was made)
    assert status["kueue"]["api"] == "v1beta2"
    [queue] = status["kueue"]["queues"]
    assert (queue["name"], queue["admitted"], queue["pending"]) == ("kinetic", 0, 0)
    shown_status = _ok(kinetic("status"))
    assert "Kueue:" in shown_status and "(API v1beta2)" in shown_status
    assert re.search(r"^JobSet: +installed \(API v1alpha2\)$", shown_status, re.MULTILINE)
    assert "QUEUE" in shown_status and "ADMITTED" in shown_status
    assert "kinetic-tpu-v5e-8-multihost" in _ok(kinetic("pool", "list"))

    _ok(kinetic("pool", "remove", "kinetic-tpu-v5e-8-multihost", "--yes"))
    assert "kinetic-tpu-v5e-8-multihost" not in _ok(kinetic("pool", "list"))

    refused = kinetic("down", input="n\n")
    assert refused.exit_code != 0
    assert up_env.container.cluster(PROJECT, ZONE, cluster_name) is not None
    gone = _ok(kinetic("down", "--yes"))
    assert up_env.container.cluster(PROJECT, ZONE, cluster_name) is None
    assert up_env.apis.service_accounts == {} and up_env.apis.repositories == {}
    assert "is kept" in gone
    after = json.loads(_ok(kinetic("status", "--json")))
    assert after["cluster"] is None and after["bucket"]["exists"] is True


def test_status_and_down_on_a_project_whose_apis_are_off(
    up_env: FakeGoogleCloud, kinetic: Invoke
) -> None:
    """Nothing can exist behind an API that is off: status says so, down has nothing to do."""
    status = json.loads(_ok(kinetic("status", "--json")))
    assert len(status["apis_off"]) == 7 and status["cluster"] is None
    assert "APIs off: container.googleapis.com" in _ok(kinetic("status"))
    down = _ok(kinetic("down", "--yes"))
    assert "Nothing to do" in down and "service accounts not checked" in down
    assert mutations(up_env.calls) == []
