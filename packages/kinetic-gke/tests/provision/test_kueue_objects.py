"""The Kueue objects `kinetic up` derives from a cluster's pools and declared queues (a pure
function), and the `queues` setting they are declared by."""

from typing import Any

import pytest

from kinetic_gke.pools import SPOT_TAINT, Autoprovisioning, PoolHardware, PoolInfo
from kinetic_gke.provision.kueue_objects import (
    CPU_FLAVOR,
    CPU_SPOT_FLAVOR,
    SHARE_ANNOTATION,
    flavors,
    kueue_objects,
)
from kinetic_gke.provision.queue_shares import QueueShares
from kinetic_gke.scheduling import scheduling_for
from kinetic_protocol import ConfigError, parse_accelerator

LABELS = {"managed-by": "kinetic"}
NAP = Autoprovisioning(True, max_cpu=256, max_memory_gb=1024)
L4_SPOT = PoolInfo(
    "kinetic-gpu-l4-x2-spot", PoolHardware("g2-standard-24", "nvidia-l4", 2), spot=True,
    autoscaling=True, max_nodes=4,
)  # fmt: skip
L4 = PoolInfo(
    "kinetic-gpu-l4-x2", PoolHardware("g2-standard-24", "nvidia-l4", 2), autoscaling=True,
    max_nodes=1,
)  # fmt: skip
TPU_SLICE = PoolInfo(
    "kinetic-tpu-v5e-8-multihost", PoolHardware("ct5lp-hightpu-4t", tpu_topology="2x4"),
    autoscaling=True, max_nodes=2,
)  # fmt: skip
TPU_HOST = PoolInfo("v5e-host", PoolHardware("ct5lp-hightpu-4t"), node_count=3)
DEFAULT = PoolInfo("kinetic-default", PoolHardware("e2-standard-4"), autoscaling=True, max_nodes=3)
POOLS = (DEFAULT, L4_SPOT, L4, TPU_SLICE, TPU_HOST)


def _by_kind(objects: list[dict[str, Any]]) -> dict[str, dict[str, dict[str, Any]]]:
    found: dict[str, dict[str, dict[str, Any]]] = {}
    for obj in objects:
        found.setdefault(obj["kind"], {})[obj["metadata"]["name"]] = obj
    return found


def _quota(cluster_queue: dict[str, Any], flavor: str) -> dict[str, str]:
    [group] = cluster_queue["spec"]["resourceGroups"]
    [entry] = [f for f in group["flavors"] if f["name"] == flavor]
    return {r["name"]: r["nominalQuota"] for r in entry["resources"]}


def test_a_flavor_per_accelerator_pool_with_its_labels_and_taints_and_two_for_cpu() -> None:
    made, notes = flavors(POOLS, NAP)
    assert notes == []
    by_name = {flavor.name: flavor for flavor in made}
    assert list(by_name) == [  # spot first; then the newer accelerator (TPU after GPU)
        "kinetic-gpu-l4-x2-spot", "kinetic-tpu-v5e-8-multihost", "v5e-host",
        "kinetic-gpu-l4-x2", CPU_SPOT_FLAVOR, CPU_FLAVOR,
    ]  # fmt: skip
    spot = by_name["kinetic-gpu-l4-x2-spot"]
    assert spot.node_labels == {
        "cloud.google.com/gke-accelerator": "nvidia-l4",
        "cloud.google.com/gke-spot": "true",
        "cloud.google.com/gke-nodepool": "kinetic-gpu-l4-x2-spot",
    }
    assert spot.taints == (("nvidia.com/gpu", "present"), SPOT_TAINT)
    assert by_name["kinetic-gpu-l4-x2"].taints == (("nvidia.com/gpu", "present"),)
    # 4 nodes at most, each 2 GPUs on a g2-standard-24 (24 vCPUs, 96 GiB)
    assert spot.capacity == {"nvidia.com/gpu": 8, "cpu": 96_000, "memory": 4 * 96 * 1024}
    tpu = by_name["kinetic-tpu-v5e-8-multihost"]
    assert tpu.node_labels == {
        "cloud.google.com/gke-tpu-accelerator": "tpu-v5-lite-podslice",
        "cloud.google.com/gke-tpu-topology": "2x4",
        "node.kubernetes.io/instance-type": "ct5lp-hightpu-4t",
        "cloud.google.com/gke-nodepool": "kinetic-tpu-v5e-8-multihost",
    }
    assert tpu.taints == (("google.com/tpu", "present"),)
    assert tpu.capacity["google.com/tpu"] == 8
    # A fixed-size pool counts its nodes; a single-host pool takes its topology from the machine.
    host = by_name["v5e-host"]
    assert host.capacity["google.com/tpu"] == 12
    assert host.node_labels["cloud.google.com/gke-tpu-topology"] == "2x2"
    assert by_name[CPU_FLAVOR].capacity == {"cpu": 256_000, "memory": 1024 * 1024}
    assert by_name[CPU_FLAVOR].node_labels == {} and by_name[CPU_FLAVOR].taints == ()
    assert by_name[CPU_SPOT_FLAVOR].taints == (SPOT_TAINT,)


def test_a_queue_tries_reservations_then_spot_then_on_demand_and_newer_accelerators_first() -> None:
    h100, a100 = (
        PoolHardware("a3-highgpu-8g", "nvidia-h100-80gb", 8),
        PoolHardware("a2-ultragpu-8g", "nvidia-a100-80gb", 8),
    )
    pools = [
        PoolInfo("a100", a100, node_count=1),
        PoolInfo("h100", h100, node_count=1),
        PoolInfo("a100-spot", a100, spot=True, node_count=1),
        PoolInfo("h100-res", h100, node_count=1, reservation="team-h100"),
    ]
    made, _notes = flavors(pools, NAP)
    assert [f.name for f in made] == [
        "h100-res", "a100-spot", "h100", "a100", CPU_SPOT_FLAVOR, CPU_FLAVOR,
    ]  # fmt: skip
    reserved = made[0]
    assert reserved.node_labels["kinetic.dev/reservation"] == "team-h100"
    assert ("kinetic.dev/reservation", "team-h100") in reserved.taints
    objects, _ = kueue_objects(pools, NAP, QueueShares(), "jobs", LABELS)
    [queue] = [o for o in objects if o["kind"] == "ClusterQueue"]
    [group] = queue["spec"]["resourceGroups"]
    assert [f["name"] for f in group["flavors"]] == [f.name for f in made]


def test_a_flex_start_pool_admits_through_the_provisioning_check_and_other_flavors_do_not() -> None:
    l4_flex = PoolInfo(
        "kinetic-gpu-l4-x2-flex", PoolHardware("g2-standard-24", "nvidia-l4", 2),
        autoscaling=True, max_nodes=2, flex_start=True,
    )  # fmt: skip
    made, _notes = flavors([L4, l4_flex, L4_SPOT], NAP)
    assert [f.name for f in made][:3] == [L4_SPOT.name, l4_flex.name, L4.name]
    flex = made[1]
    assert flex.flex_start and flex.node_labels["kinetic.dev/flex-start"] == "true"
    assert ("kinetic.dev/flex-start", "true") in flex.taints
    objects, _ = kueue_objects([L4, l4_flex], NAP, QueueShares(), "jobs", LABELS)
    by_kind = _by_kind(objects)
    kinds = [o["kind"] for o in objects]
    assert kinds.index("AdmissionCheck") < kinds.index("ClusterQueue")
    config = by_kind["ProvisioningRequestConfig"]["kinetic-flex-start"]["spec"]
    assert config["provisioningClassName"] == "queued-provisioning.gke.io"
    check = by_kind["AdmissionCheck"]["kinetic-flex-start"]["spec"]
    assert check["controllerName"] == "kueue.x-k8s.io/provisioning-request"
    assert check["parameters"]["name"] == "kinetic-flex-start"
    queue = by_kind["ClusterQueue"]["kinetic"]["spec"]
    assert queue["admissionChecksStrategy"] == {
        "admissionChecks": [{"name": "kinetic-flex-start", "onFlavors": [l4_flex.name]}]
    }
    without, _ = kueue_objects([L4], NAP, QueueShares(), "jobs", LABELS)
    assert {o["kind"] for o in without}.isdisjoint({"AdmissionCheck", "ProvisioningRequestConfig"})
    assert "admissionChecksStrategy" not in _by_kind(without)["ClusterQueue"]["kinetic"]["spec"]


def test_without_auto_provisioning_cpu_capacity_is_the_cpu_pools() -> None:
    made, _notes = flavors(POOLS, Autoprovisioning())
    by_name = {flavor.name: flavor for flavor in made}
    assert by_name[CPU_FLAVOR].capacity == {"cpu": 3 * 4000, "memory": 3 * 16 * 1024}
    assert by_name[CPU_SPOT_FLAVOR].capacity == {"cpu": 0, "memory": 0}


def test_a_pool_of_a_machine_kinetic_does_not_know_is_left_out_with_a_note() -> None:
    odd = PoolInfo("odd", PoolHardware("custom-8-32768", "nvidia-l4", 1), node_count=1)
    made, notes = flavors((odd,), NAP)
    assert [flavor.name for flavor in made] == [CPU_SPOT_FLAVOR, CPU_FLAVOR]
    assert notes == ["node pool odd gets no Kueue flavor: Kinetic does not know custom-8-32768"]


def _kueue_picks(flavor_objects: list[dict[str, Any]], accelerator: str, spot: bool) -> list[str]:
    """The flavors Kueue would let a Kinetic pod of ``accelerator`` take: it must tolerate the
    flavor's taints, and its node selector, on the label keys some flavor has, must match the
    flavor's labels (Kueue v0.17's flavorassigner)."""
    placed = scheduling_for(parse_accelerator(accelerator), spot=spot)
    keys = {key for f in flavor_objects for key in f["spec"].get("nodeLabels", {})}
    picks = []
    for flavor in flavor_objects:
        labels = flavor["spec"].get("nodeLabels", {})
        tolerated = all(
            any(
                t["key"] == taint["key"]
                and (t["operator"] == "Exists" or t.get("value") == taint["value"])
                for t in placed.tolerations
            )
            for taint in flavor["spec"].get("nodeTaints", [])
        )
        selected = all(labels.get(k) == v for k, v in placed.node_selector.items() if k in keys)
        if tolerated and selected:
            picks.append(flavor["metadata"]["name"])
    return picks


@pytest.mark.parametrize(
    ("accelerator", "spot", "expected"),
    [
        ("cpu", False, [CPU_FLAVOR]),
        ("cpu", True, [CPU_SPOT_FLAVOR]),
        ("gpu-l4", False, ["kinetic-gpu-l4-x2"]),
        ("gpu-l4-x2", True, ["kinetic-gpu-l4-x2-spot"]),
        ("gpu-a100", False, []),
        ("tpu-v5e-8-multihost", False, ["kinetic-tpu-v5e-8-multihost"]),
        ("tpu-v5e-4", False, ["v5e-host"]),
        ("tpu-v5e-8", False, []),  # one 8-chip host: no pool has it
    ],
)
def test_a_job_can_take_only_the_flavors_of_pools_it_can_run_on(
    accelerator: str, spot: bool, expected: list[str]
) -> None:
    objects, _notes = kueue_objects(POOLS, NAP, QueueShares(), "jobs", LABELS)
    flavor_objects = [o for o in objects if o["kind"] == "ResourceFlavor"]
    assert _kueue_picks(flavor_objects, accelerator, spot) == expected


def test_queues_split_every_flavors_capacity_by_share_in_one_cohort() -> None:
    queues = QueueShares.parse("team-a=2, team-b")
    objects, _notes = kueue_objects(POOLS, NAP, queues, "jobs", LABELS)
    found = _by_kind(objects)
    assert [o["kind"] for o in objects] == (
        ["ResourceFlavor"] * 6 + ["WorkloadPriorityClass"] * 3 + ["ClusterQueue"] * 3
        + ["LocalQueue"] * 3
    )  # fmt: skip
    assert set(found["ClusterQueue"]) == {"kinetic", "team-a", "team-b"}
    # 8 spot L4s, 2:1 (the default queue, not declared, has share 0): 5.33 and 2.67 -> 5 and 3
    spot = "kinetic-gpu-l4-x2-spot"
    assert _quota(found["ClusterQueue"]["team-a"], spot)["nvidia.com/gpu"] == "5"
    assert _quota(found["ClusterQueue"]["team-b"], spot)["nvidia.com/gpu"] == "3"
    assert _quota(found["ClusterQueue"]["kinetic"], spot) == {
        "cpu": "0", "memory": "0Gi", "nvidia.com/gpu": "0", "google.com/tpu": "0"
    }  # fmt: skip
    # 256 vCPUs: 170.666 and 85.333 -> 170667m and 85333m, adding up to the whole
    assert _quota(found["ClusterQueue"]["team-a"], CPU_FLAVOR)["cpu"] == "170667m"
    assert _quota(found["ClusterQueue"]["team-b"], CPU_FLAVOR)["cpu"] == "85333m"
    team_a = found["ClusterQueue"]["team-a"]
    assert team_a["metadata"]["annotations"] == {SHARE_ANNOTATION: "2"}
    assert team_a["metadata"]["labels"] == LABELS
    spec = team_a["spec"]
    assert spec["cohortName"] == "kinetic" and spec["queueingStrategy"] == "BestEffortFIFO"
    assert spec["preemption"] == {
        "withinClusterQueue": "LowerPriority",
        "reclaimWithinCohort": "Any",
    }
    [group] = spec["resourceGroups"]
    assert group["coveredResources"] == ["cpu", "memory", "nvidia.com/gpu", "google.com/tpu"]
    for flavor in group["flavors"]:  # Kueue wants every covered resource, in that order
        assert [r["name"] for r in flavor["resources"]] == group["coveredResources"]
    local = found["LocalQueue"]["team-b"]
    assert local["metadata"]["namespace"] == "jobs"
    assert local["spec"] == {"clusterQueue": "team-b"}
    priorities = {name: o["value"] for name, o in found["WorkloadPriorityClass"].items()}
    assert priorities == {"low": -100, "normal": 0, "high": 100}


def test_one_queue_takes_it_all_and_covers_only_the_resources_the_pools_have() -> None:
    objects, _notes = kueue_objects((DEFAULT, L4), NAP, QueueShares(), "jobs", LABELS)
    [queue] = [o for o in objects if o["kind"] == "ClusterQueue"]
    [group] = queue["spec"]["resourceGroups"]
    assert group["coveredResources"] == ["cpu", "memory", "nvidia.com/gpu"]
    assert _quota(queue, "kinetic-gpu-l4-x2") == {
        "cpu": "24",
        "memory": "96Gi",
        "nvidia.com/gpu": "2",
    }
    assert _quota(queue, CPU_FLAVOR) == {"cpu": "256", "memory": "1024Gi", "nvidia.com/gpu": "0"}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("team-a=2,team-b=1", (("kinetic", 0), ("team-a", 2), ("team-b", 1))),
        (" team-a , kinetic=3 ,", (("kinetic", 3), ("team-a", 1))),
        ("kinetic", (("kinetic", 1),)),
    ],
)
def test_queues_are_declared_by_name_and_share(
    text: str, expected: tuple[tuple[str, int], ...]
) -> None:
    parsed = QueueShares.parse(text)
    assert parsed.shares == expected
    assert QueueShares.parse(parsed.text) == parsed


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("Team_A=1", "'Team_A' is not a valid name for a queue"),
        ("team-a=half", "the share of queue 'team-a' is 'half', not a whole number"),
        ("team-a=-1", "the share of queue 'team-a' is '-1'"),
        ("team-a=1,team-a=2", "names queue 'team-a' twice"),
        ("team-a=0", "every share is 0"),
        (" , ", "declares no queue"),
    ],
)
def test_a_bad_declaration_is_refused_naming_what_is_wrong(text: str, message: str) -> None:
    with pytest.raises(ConfigError, match="KINETIC_QUEUES") as caught:
        QueueShares.parse(text)
    assert message in str(caught.value)
