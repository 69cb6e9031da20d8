"""``kinetic pool add``'s request, checked before anything is planned, and the node pool it
asks GKE for (a pure function of the request)."""

import pytest

from kinetic_gke.gcp import pool_info
from kinetic_gke.pools import pool_name, pool_shape
from kinetic_gke.provision.pools import PoolRequest, node_pool
from kinetic_gke.provision.spec import ClusterSpec
from kinetic_protocol import ConfigError, parse_accelerator

L4 = parse_accelerator("gpu-l4")
SPEC = ClusterSpec(project="p", zone="us-central1-a", cluster="c")


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"spot": True}, r"--flex-start and --spot exclude each other"),
        ({"reservation": "team"}, r"--flex-start and --reservation exclude each other"),
        ({"min_nodes": 1}, r"--flex-start with --min-nodes 1: .* --min-nodes is 0"),
    ],
)
def test_flex_start_is_refused_with_what_it_excludes(
    options: dict[str, object], message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        PoolRequest(pool_shape(L4), flex_start=True, **options)  # type: ignore[arg-type]


def test_a_flex_start_pool_is_queued_provisioning_labelled_and_tainted_and_reads_back_so() -> None:
    request = PoolRequest(pool_shape(L4), flex_start=True)
    assert pool_name(L4, flex_start=True) == "kinetic-gpu-l4-flex"
    pool = node_pool(SPEC, "kinetic-gpu-l4-flex", request)
    assert pool.queued_provisioning.enabled
    assert pool.initial_node_count == 0 and pool.autoscaling.enabled
    assert pool.config.labels["kinetic.dev/flex-start"] == "true"
    assert [(t.key, t.value) for t in pool.config.taints] == [("kinetic.dev/flex-start", "true")]
    assert not pool.management.auto_repair  # GKE refuses auto-repair on such a pool
    read = pool_info(pool)
    assert read.flex_start and read.capacity == "flex-start"
    plain = pool_info(node_pool(SPEC, "kinetic-gpu-l4", PoolRequest(pool_shape(L4))))
    assert not plain.flex_start and plain.capacity == "on-demand"
