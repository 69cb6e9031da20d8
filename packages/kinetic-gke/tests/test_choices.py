"""A job's choices of accelerator and capacity on gke (issue 52): the pod terms that let Kueue
give it any of them, which one an admitted job got, and every refusal before upload."""

from pathlib import Path
from typing import Any

import pytest
from gke_test_support import make_record

from kinetic_gke.choices import check_choices, choice_index, placement_of
from kinetic_gke.manifests import job_manifest
from kinetic_gke.queueing.flavor_order import check_flavor_order
from kinetic_protocol import ConfigError, PrepareRequest, parse_accelerator
from kinetic_protocol.capacity import Choice, Placement, record_choices

SPOT = "cloud.google.com/gke-spot"
RESERVATION = "kinetic.dev/reservation"
ACCELERATOR = "cloud.google.com/gke-accelerator"
FLEX = "kinetic.dev/flex-start"


def _pod(**fields: Any) -> dict[str, Any]:
    spec: dict[str, Any] = job_manifest(make_record(**fields))["spec"]["template"]["spec"]
    return spec


def test_one_choice_pins_its_nodes_as_before_and_a_reservation_adds_its_label() -> None:
    plain = _pod(accelerator="gpu-l4")
    assert plain["nodeSelector"] == {ACCELERATOR: "nvidia-l4"}
    assert "affinity" not in plain
    reserved = _pod(accelerator="gpu-l4", capacity=["reservation:team-l4"])
    assert reserved["nodeSelector"] == {ACCELERATOR: "nvidia-l4", RESERVATION: "team-l4"}
    assert {
        "key": RESERVATION,
        "operator": "Equal",
        "value": "team-l4",
        "effect": "NoSchedule",
    } in (reserved["tolerations"])


def test_max_run_duration_is_the_annotation_kueue_passes_to_the_provisioning_request() -> None:
    fields = {"accelerator": "gpu-l4", "capacity": ["flex-start"], "queue": "kinetic"}
    bounded = job_manifest(make_record(**fields, max_run_duration=3600))["metadata"]
    assert bounded["annotations"]["provreq.kueue.x-k8s.io/maxRunDurationSeconds"] == "3600"
    plain = job_manifest(make_record(**fields))["metadata"]
    assert "provreq.kueue.x-k8s.io/maxRunDurationSeconds" not in plain.get("annotations", {})


def test_several_choices_name_each_as_a_node_affinity_term_in_order() -> None:
    pod = _pod(
        accelerator="gpu-l4", fallback_accelerators=["gpu-t4"], capacity=["spot", "on-demand"]
    )
    assert "nodeSelector" not in pod, "Kueue writes the admitting flavor's labels there"
    terms = pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    wanted = [
        ("nvidia-l4", {"key": SPOT, "operator": "In", "values": ["true"]}),
        ("nvidia-tesla-t4", {"key": SPOT, "operator": "In", "values": ["true"]}),
        ("nvidia-l4", {"key": SPOT, "operator": "DoesNotExist"}),
        ("nvidia-tesla-t4", {"key": SPOT, "operator": "DoesNotExist"}),
    ]
    for term, (gpu, spot) in zip(terms["nodeSelectorTerms"], wanted, strict=True):
        expressions = term["matchExpressions"]
        assert {"key": ACCELERATOR, "operator": "In", "values": [gpu]} in expressions
        assert spot in expressions
        assert {"key": RESERVATION, "operator": "DoesNotExist"} in expressions
    assert {t["key"] for t in pod["tolerations"]} == {"nvidia.com/gpu", SPOT}
    resources = pod["containers"][0]["resources"]
    assert resources["limits"] == {"nvidia.com/gpu": "1"}
    # the smaller machine's share: 3/4 of a T4's n1-standard-4 (15 GiB), not of an L4's 16 GiB
    assert (
        resources["requests"]["memory"]
        == job_manifest(make_record(accelerator="gpu-t4"))["spec"]["template"]["spec"][
            "containers"
        ][0]["resources"]["requests"]["memory"]
    )


def test_an_admitted_job_reads_the_choice_its_flavor_gave() -> None:
    record = make_record(
        accelerator="gpu-l4",
        fallback_accelerators=["gpu-t4"],
        capacity=["reservation:team-l4", "spot", "on-demand"],
    )
    choices = record_choices(record)
    t4_pool = {ACCELERATOR: "nvidia-tesla-t4", "cloud.google.com/gke-nodepool": "t4"}
    assert placement_of(record, {"nodeSelector": t4_pool}, "t4") == Placement(
        accelerator="gpu-t4", capacity="on-demand", flavor="t4"
    )
    assert choice_index({ACCELERATOR: "nvidia-l4", SPOT: "true"}, choices) == 2
    assert choice_index({ACCELERATOR: "nvidia-l4", RESERVATION: "team-l4"}, choices) == 0
    assert choice_index({ACCELERATOR: "nvidia-l4", RESERVATION: "other"}, choices) is None
    assert choice_index({ACCELERATOR: "nvidia-h100-80gb"}, choices) is None
    assert placement_of(record, {"nodeSelector": {}}) is None, "pending: nothing written yet"


def _request(**fields: Any) -> PrepareRequest:
    return PrepareRequest(accelerator=parse_accelerator("gpu-l4"), project_root=Path("."), **fields)


@pytest.mark.parametrize(
    ("fields", "queued", "message"),
    [
        (
            {"capacity": ("flex-start",)},
            False,
            r"capacity='flex-start' is admitted through Kueue.*cluster 'c' does not serve Kueue\. "
            r"Run `kinetic up`.*--flex-start",
        ),
        ({"capacity": ("spot", "flex-start")}, False, r"'flex-start' is admitted through Kueue"),
        (
            {"fallback_accelerators": (parse_accelerator("gpu-t4"),)},
            False,
            r"2 choices \(gpu-l4 \(on-demand\), gpu-t4 \(on-demand\)\) needs Kueue.*kinetic up",
        ),
        (
            {"capacity": ("spot", "on-demand"), "nodes": 2},
            True,
            r"A job of nodes=2 runs on one accelerator and one kind of capacity on gke for now",
        ),
    ],
)
def test_what_gke_cannot_give_is_refused_before_upload(
    fields: dict[str, Any], queued: bool, message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        check_choices(_request(**fields), queued=queued, cluster="c")


def test_one_or_several_choices_that_gke_can_give_pass() -> None:
    assert check_choices(_request(spot=True), queued=False, cluster="c") == (
        Choice("gpu-l4", "spot"),
    )
    listed = _request(capacity=("reservation:r", "on-demand"))
    assert len(check_choices(listed, queued=True, cluster="c")) == 2
    flex = _request(capacity=("flex-start",))
    assert check_choices(flex, queued=True, cluster="c") == (Choice("gpu-l4", "flex-start"),)


def test_flex_start_pins_its_pool_and_other_choices_keep_off_it() -> None:
    pod = _pod(accelerator="gpu-l4", capacity=["flex-start"])
    assert pod["nodeSelector"] == {ACCELERATOR: "nvidia-l4", FLEX: "true"}
    assert {"key": FLEX, "operator": "Equal", "value": "true", "effect": "NoSchedule"} in (
        pod["tolerations"]
    )
    pod = _pod(accelerator="gpu-l4", capacity=["flex-start", "on-demand"])
    first, second = pod["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ]["nodeSelectorTerms"]
    assert {"key": FLEX, "operator": "In", "values": ["true"]} in first["matchExpressions"]
    assert {"key": FLEX, "operator": "DoesNotExist"} in second["matchExpressions"]
    choices = (Choice("gpu-l4", "flex-start"), Choice("gpu-l4", "on-demand"))
    assert choice_index({ACCELERATOR: "nvidia-l4", FLEX: "true"}, choices) == 0
    assert choice_index({ACCELERATOR: "nvidia-l4"}, choices) == 1
    assert choice_index({ACCELERATOR: "nvidia-l4", FLEX: "true"}, choices[1:]) is None


class _Queue:
    """Kueue's objects as a view reads them: a LocalQueue ``q`` of ClusterQueue ``cq`` whose
    flavors, in order, have the given node labels (a unit test of the ordering logic only)."""

    def __init__(self, flavors: dict[str, dict[str, str]] | None) -> None:
        self.flavors = flavors

    def read_local_queue(self, name: str) -> dict[str, Any] | None:
        return {"spec": {"clusterQueue": "cq"}}

    def read_cluster_queue(self, name: str) -> dict[str, Any] | None:
        if self.flavors is None:
            return None  # not allowed to read it
        names = [{"name": flavor} for flavor in self.flavors]
        return {"spec": {"resourceGroups": [{"flavors": names}]}}

    def read_flavor(self, name: str) -> dict[str, Any] | None:
        return {"spec": {"nodeLabels": (self.flavors or {})[name]}}


L4_SPOT = {ACCELERATOR: "nvidia-l4", SPOT: "true"}
L4 = {ACCELERATOR: "nvidia-l4"}
T4 = {ACCELERATOR: "nvidia-tesla-t4"}
SPOT_THEN_ON_DEMAND = (Choice("gpu-l4", "spot"), Choice("gpu-l4", "on-demand"))


def test_choices_in_the_queues_order_pass_and_an_unreadable_queue_refuses_nothing() -> None:
    queue = _Queue({"l4-spot": L4_SPOT, "l4": L4, "t4": T4, "kinetic-cpu": {}})
    check_flavor_order(queue, "q", SPOT_THEN_ON_DEMAND)  # type: ignore[arg-type]
    check_flavor_order(_Queue(None), "q", SPOT_THEN_ON_DEMAND[::-1])  # type: ignore[arg-type]


def test_choices_against_the_queues_order_are_refused_naming_its_order() -> None:
    queue = _Queue({"l4-spot": L4_SPOT, "l4": L4})
    refused = (
        r"in the order asked \(gpu-l4 \(on-demand\), gpu-l4 \(spot\)\), are not the order queue "
        r"'q' \(cluster queue 'cq'\) tries them in: gpu-l4 \(spot\) \[l4-spot\], gpu-l4 "
        r"\(on-demand\) \[l4\]"
    )
    with pytest.raises(ConfigError, match=refused):
        check_flavor_order(queue, "q", SPOT_THEN_ON_DEMAND[::-1])  # type: ignore[arg-type]


def test_a_choice_no_flavor_gives_is_refused_with_the_pool_to_add() -> None:
    queue = _Queue({"l4": L4})
    refused = r"has no flavor for gpu-l4 \(spot\).*`kinetic pool add --accelerator gpu-l4 --spot`"
    with pytest.raises(ConfigError, match=refused):
        check_flavor_order(queue, "q", SPOT_THEN_ON_DEMAND)  # type: ignore[arg-type]


def test_a_reservation_no_flavor_gives_is_refused_with_the_pool_that_consumes_it() -> None:
    queue = _Queue({"l4": L4})
    unknown = (Choice("gpu-l4", "reservation:res-a"), Choice("gpu-l4", "on-demand"))
    refused = (
        r"has no flavor for gpu-l4 \(reservation:res-a\).*"
        r"`kinetic pool add --accelerator gpu-l4 --reservation res-a`"
    )
    with pytest.raises(ConfigError, match=refused):
        check_flavor_order(queue, "q", unknown)  # type: ignore[arg-type]
