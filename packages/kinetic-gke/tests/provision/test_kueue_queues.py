"""Kueue's queues as `kinetic up` and `kinetic pool add/remove` keep them, on the real control
plane with Kueue running: made after a failure half-way, unchanged by a second `up`, raised by
`pool add` and lowered by `pool remove`, and accepted by Kueue itself (each queue Active)."""

import time
from fractions import Fraction

import pytest
from provision_support import Invoke, ok

from kinetic_gke.provision import kueue_queues
from kinetic_gke.provision.quantities import amount
from kinetic_testing.controlplane.cluster import ControlPlane
from kinetic_testing.controlplane.proxy import ApiFault, ApiProxy
from kinetic_testing.gcp_fake import FakeGoogleCloud

pytestmark = [pytest.mark.realk8s, pytest.mark.gcs]

API = "/apis/kueue.x-k8s.io/v1beta2"
SPOT_L4 = "kinetic-gpu-l4-x2-spot"
RESERVED_L4 = "kinetic-gpu-l4-r-team-l4"
FLEX_L4 = "kinetic-gpu-l4-flex"


def _quota(plane: ControlPlane, queue: str) -> dict[str, dict[str, Fraction]]:
    """Nominal quota of a ClusterQueue, by flavor and resource (as amounts: Kueue may write
    ``1024Gi`` as ``1Ti``)."""
    found = plane.request("GET", f"{API}/clusterqueues/{queue}")
    [group] = found["spec"]["resourceGroups"]
    return {
        flavor["name"]: {r["name"]: amount(r["nominalQuota"]) for r in flavor["resources"]}
        for flavor in group["flavors"]
    }


def _wait_active(plane: ControlPlane, queue: str) -> None:
    """Until Kueue reports the ClusterQueue Active (it checked its flavors exist)."""
    _wait_condition(plane, f"clusterqueues/{queue}")


def _wait_condition(plane: ControlPlane, path: str) -> None:
    """Until Kueue reports the object at ``path`` Active (a queue: its flavors and checks
    exist; an AdmissionCheck: its controller runs)."""
    deadline = time.monotonic() + 30
    while True:
        conditions = plane.request("GET", f"{API}/{path}").get("status", {})
        active = [c for c in conditions.get("conditions", []) if c["type"] == "Active"]
        if active and active[0]["status"] == "True":
            return
        assert time.monotonic() < deadline, f"{path} not Active: {active}"
        time.sleep(0.1)


@pytest.fixture
def own_queues(real_k8s: ControlPlane, k8s_namespace: str) -> None:
    """The test namespace without the session's LocalQueue, so `up` makes its own (what it
    makes cluster-wide, `up_env` removes afterwards)."""
    real_k8s.request("DELETE", f"{API}/namespaces/{k8s_namespace}/localqueues/kinetic")


def test_up_makes_the_queues_converging_then_pool_add_and_remove_move_the_quota(
    up_env: FakeGoogleCloud,
    own_queues: None,
    cluster_api: ApiProxy,
    real_k8s: ControlPlane,
    k8s_namespace: str,
    kinetic: Invoke,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("KINETIC_QUEUES", "team-a=2,team-b=1")
    cluster_api.inject(ApiFault(method="PATCH", path_contains="/clusterqueues/", code=403))
    failed = kinetic("up")
    assert failed.exit_code == 1 and "applying ClusterQueue" in failed.output

    made = ok(kinetic("up"))
    assert "Kueue queues kinetic (share 0), team-a (share 2), team-b (share 1)" in made
    again = ok(kinetic("up"))
    assert "Nothing to do: everything is in place." in again
    assert "Kueue queues in place (kinetic, team-a, team-b)" in again
    for name in ("kinetic", "team-a", "team-b"):
        _wait_active(real_k8s, name)
        local = real_k8s.request("GET", f"{API}/namespaces/{k8s_namespace}/localqueues/{name}")
        assert local["spec"]["clusterQueue"] == name
        assert local["metadata"]["labels"] == {"managed-by": "kinetic"}
    # 256 vCPUs and 1024 GB of auto-provisioning, split 0:2:1
    assert _quota(real_k8s, "team-a")["kinetic-cpu"] == {
        "cpu": amount("170667m"),
        "memory": amount("699051Mi"),
    }
    assert _quota(real_k8s, "kinetic")["kinetic-cpu"] == {"cpu": 0, "memory": 0}
    cohort = real_k8s.request("GET", f"{API}/clusterqueues/team-b")["spec"]["cohortName"]
    assert cohort == "kinetic"

    added = ok(kinetic("pool", "add", "--accelerator", "gpu-l4-x2", "--max-nodes", "4", "--spot"))
    assert f"+ResourceFlavor/{SPOT_L4}" in added
    assert "nvidia.com/gpu 0 -> 5" in added
    assert _quota(real_k8s, "team-a")[SPOT_L4]["nvidia.com/gpu"] == 5
    assert _quota(real_k8s, "team-b")[SPOT_L4]["nvidia.com/gpu"] == 3
    flavor = real_k8s.request("GET", f"{API}/resourceflavors/{SPOT_L4}")["spec"]
    assert flavor["nodeLabels"]["cloud.google.com/gke-accelerator"] == "nvidia-l4"
    assert {"key": "cloud.google.com/gke-spot", "value": "true", "effect": "NoSchedule"} in (
        flavor["nodeTaints"]
    )
    _wait_active(real_k8s, "team-a")

    removed = ok(kinetic("pool", "remove", SPOT_L4, "--yes"))
    assert f"-ResourceFlavor/{SPOT_L4}" in removed
    assert SPOT_L4 not in _quota(real_k8s, "team-a")
    assert "Nothing to do: everything is in place." in ok(kinetic("up"))

    reserved = ok(kinetic("pool", "add", "--accelerator", "gpu-l4", "--reservation", "team-l4"))
    assert f"+ResourceFlavor/{RESERVED_L4}" in reserved
    flavor = real_k8s.request("GET", f"{API}/resourceflavors/{RESERVED_L4}")["spec"]
    assert flavor["nodeLabels"]["kinetic.dev/reservation"] == "team-l4"
    assert {"key": "kinetic.dev/reservation", "value": "team-l4", "effect": "NoSchedule"} in (
        flavor["nodeTaints"]
    )
    assert "Nothing to do: everything is in place." in ok(kinetic("up")), "read back the same"

    flex = ok(kinetic("pool", "add", "--accelerator", "gpu-l4", "--flex-start"))
    for made in (f"+ResourceFlavor/{FLEX_L4}", "+ProvisioningRequestConfig/kinetic-flex-start",
                 "+AdmissionCheck/kinetic-flex-start"):  # fmt: skip
        assert made in flex
    strategy = real_k8s.request("GET", f"{API}/clusterqueues/team-a")["spec"]
    assert strategy["admissionChecksStrategy"]["admissionChecks"] == [
        {"name": "kinetic-flex-start", "onFlavors": [FLEX_L4]}
    ]
    _wait_condition(real_k8s, "admissionchecks/kinetic-flex-start")  # Kueue's provisioning check
    _wait_active(real_k8s, "team-a")
    assert "Nothing to do: everything is in place." in ok(kinetic("up")), "read back the same"


def _held_and_deleted(plane: ControlPlane, name: str, *, make: bool) -> None:
    """ResourceFlavor ``name`` being deleted and held there by a finalizer of the test's, as
    Kueue holds a flavor that a queue still uses."""
    if make:
        plane.request("POST", f"{API}/resourceflavors", {
            "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor",
            "metadata": {"name": name, "labels": {"managed-by": "kinetic"}},
        })  # fmt: skip
    patch = {"metadata": {"finalizers": [HOLD]}}
    plane.request("PATCH", f"{API}/resourceflavors/{name}", patch, content_type=MERGE)
    plane.request("DELETE", f"{API}/resourceflavors/{name}")
    found = plane.request("GET", f"{API}/resourceflavors/{name}")
    assert found["metadata"].get("deletionTimestamp"), found["metadata"]


def _let_go(plane: ControlPlane, name: str) -> None:
    patch = {"metadata": {"finalizers": None}}
    plane.request("PATCH", f"{API}/resourceflavors/{name}", patch, content_type=MERGE)


HOLD = "kinetic.test/held"
MERGE = "application/merge-patch+json"


def test_a_flavor_on_its_way_out_is_not_deleted_again_and_one_still_wanted_is_waited_for(
    up_env: FakeGoogleCloud,
    own_queues: None,
    real_k8s: ControlPlane,
    kinetic: Invoke,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Kueue keeps a flavor with a finalizer until no queue uses it, so a deletion outlives
    the `up` or `pool remove` that asked for it: the next `up` must neither plan it again
    nor write into an object that is going away."""
    ok(kinetic("up"))
    _held_and_deleted(real_k8s, "kinetic-leftover", make=True)
    try:
        again = ok(kinetic("up"))
        assert "Nothing to do: everything is in place." in again
        assert "ResourceFlavor kinetic-leftover is being deleted" in again
    finally:
        _let_go(real_k8s, "kinetic-leftover")

    monkeypatch.setattr(kueue_queues, "DELETION_WAIT_S", 0.0)
    _held_and_deleted(real_k8s, "kinetic-cpu-spot", make=False)
    try:
        planned = ok(kinetic("up", "--dry-run"))
        assert "+ResourceFlavor/kinetic-cpu-spot (once its deletion ends)" in planned
        stuck = kinetic("up")
        assert stuck.exit_code == 1
        assert "ResourceFlavor kinetic-cpu-spot is being deleted, and the queues need it" in (
            stuck.output
        )
        assert HOLD in stuck.output and "finalizers" in stuck.output
    finally:
        _let_go(real_k8s, "kinetic-cpu-spot")
    ok(kinetic("up"))
    remade = real_k8s.request("GET", f"{API}/resourceflavors/kinetic-cpu-spot")
    assert not remade["metadata"].get("deletionTimestamp")
    assert "Nothing to do: everything is in place." in ok(kinetic("up"))
