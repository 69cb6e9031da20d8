"""What the gke backend accepts before anything is written: one host of an accelerator, or a
group of them (several nodes or TPU slices, run as one JobSet), never a shape that means
nothing."""

import pytest

from kinetic_gke import GKEBackend
from kinetic_protocol import BackendSettings, ConfigError, parse_accelerator

BACKEND = GKEBackend(BackendSettings(project="my-proj", cluster="c", zone="z"))


@pytest.mark.parametrize(
    ("accelerator", "nodes", "slices"),
    [("gpu-h100-x8", 4, 1), ("cpu", 2, 1), ("tpu-v5e-16", 1, 2), ("tpu-v5e-8", 1, 2)],
)
def test_a_group_of_hosts_is_accepted(accelerator: str, nodes: int, slices: int) -> None:
    BACKEND._check_shape(parse_accelerator(accelerator), nodes, slices)


@pytest.mark.parametrize(
    ("accelerator", "nodes", "slices", "rule"),
    [
        ("tpu-v5e-16", 1, 1, "backend='pathways'"),  # one multi-host slice is pathways'
        ("gpu-l4", 1, 2, "needs a TPU accelerator"),
        ("tpu-v5e-16", 2, 1, "pass slices=2"),
    ],
)
def test_what_cannot_run_here_is_refused_naming_the_rule(
    accelerator: str, nodes: int, slices: int, rule: str
) -> None:
    with pytest.raises(ConfigError, match=rule):
        BACKEND._check_shape(parse_accelerator(accelerator), nodes, slices)


def test_the_backend_says_it_runs_groups_with_a_log_per_host() -> None:
    assert GKEBackend.capabilities.host_groups
    assert GKEBackend.capabilities.per_host_logs
