"""Accelerator names parse to what they mean; bad names are refused with the nearest valid ones."""

import pytest

from kinetic_protocol import ConfigError, parse_accelerator, valid_accelerator_names
from kinetic_protocol.accelerators import TPU_GENERATIONS


@pytest.mark.parametrize(
    ("name", "canonical", "category", "kind", "count", "topology", "hosts", "k8s"),
    [
        ("cpu", "cpu", "cpu", "", 0, "", 1, ""),
        ("gpu-l4", "gpu-l4", "gpu", "l4", 1, "", 1, "nvidia-l4"),
        ("l4", "gpu-l4", "gpu", "l4", 1, "", 1, "nvidia-l4"),
        ("GPU-L4", "gpu-l4", "gpu", "l4", 1, "", 1, "nvidia-l4"),
        ("gpu-a100-x8", "gpu-a100-x8", "gpu", "a100", 8, "", 1, "nvidia-tesla-a100"),
        ("gpu-a100-80gb", "gpu-a100-80gb", "gpu", "a100-80gb", 1, "", 1, "nvidia-a100-80gb"),
        ("gpu-h200-x8", "gpu-h200-x8", "gpu", "h200", 8, "", 1, "nvidia-h200-141gb"),
        ("gpu-b200-x8", "gpu-b200-x8", "gpu", "b200", 8, "", 1, "nvidia-b200"),
        ("tpu-v5e-1", "tpu-v5e-1", "tpu", "v5e", 1, "1x1", 1, "tpu-v5-lite-podslice"),
        ("tpu-v5litepod-4", "tpu-v5e-4", "tpu", "v5e", 4, "2x2", 1, "tpu-v5-lite-podslice"),
        ("tpu-v6e-8", "tpu-v6e-8", "tpu", "v6e", 8, "2x4", 1, "tpu-v6e-slice"),
        ("tpu-v5e-16", "tpu-v5e-16", "tpu", "v5e", 16, "4x4", 4, "tpu-v5-lite-podslice"),
        # v3, v4 and v5p names count TensorCores, two per chip.
        ("tpu-v3-8", "tpu-v3-8", "tpu", "v3", 4, "2x2", 1, "tpu-v3-device"),
        ("tpu-v4-8", "tpu-v4-8", "tpu", "v4", 4, "2x2x1", 1, "tpu-v4-podslice"),
        ("tpu-v5p-16", "tpu-v5p-16", "tpu", "v5p", 8, "2x2x2", 2, "tpu-v5p-slice"),
        # Ironwood: every generation spelling, names count chips.
        ("tpu-v7x-4", "tpu-v7x-4", "tpu", "v7x", 4, "2x2x1", 1, "tpu7x"),
        ("tpu7x-8", "tpu-v7x-8", "tpu", "v7x", 8, "2x2x2", 2, "tpu7x"),
        ("tpu-7x-2x2x4", "tpu-v7x-16", "tpu", "v7x", 16, "2x2x4", 4, "tpu7x"),
        ("tpu-ironwood-64", "tpu-v7x-64", "tpu", "v7x", 64, "4x4x4", 16, "tpu7x"),
    ],
)
def test_valid_names_parse_to_their_meaning(
    name: str,
    canonical: str,
    category: str,
    kind: str,
    count: int,
    topology: str,
    hosts: int,
    k8s: str,
) -> None:
    acc = parse_accelerator(name)
    assert (acc.name, acc.category, acc.type, acc.count, acc.topology, acc.hosts) == (
        canonical,
        category,
        kind,
        count,
        topology,
        hosts,
    )
    assert acc.k8s_accelerator == k8s
    assert acc.multi_host is (hosts > 1)
    if category == "tpu":
        assert acc.chips_per_host * acc.hosts == acc.count
    else:
        assert acc.machine_type == "", "GPU machines live in kinetic_gke.machines"


# Every TPU shape of GKE's tables: canonical name -> (label, topology, machine, chips/host, hosts).
_V5E, _V6E, _V7X = "tpu-v5-lite-podslice", "tpu-v6e-slice", "tpu7x"
TPU_TABLE: dict[str, tuple[str, str, str, int, int]] = {
    "tpu-v3-8": ("tpu-v3-device", "2x2", "ct3-hightpu-4t", 4, 1),
    "tpu-v3-32": ("tpu-v3-slice", "4x4", "ct3p-hightpu-4t", 4, 4),
    "tpu-v3-64": ("tpu-v3-slice", "4x8", "ct3p-hightpu-4t", 4, 8),
    "tpu-v3-128": ("tpu-v3-slice", "8x8", "ct3p-hightpu-4t", 4, 16),
    "tpu-v3-256": ("tpu-v3-slice", "8x16", "ct3p-hightpu-4t", 4, 32),
    "tpu-v4-8": ("tpu-v4-podslice", "2x2x1", "ct4p-hightpu-4t", 4, 1),
    "tpu-v4-16": ("tpu-v4-podslice", "2x2x2", "ct4p-hightpu-4t", 4, 2),
    "tpu-v4-32": ("tpu-v4-podslice", "2x2x4", "ct4p-hightpu-4t", 4, 4),
    "tpu-v4-64": ("tpu-v4-podslice", "2x4x4", "ct4p-hightpu-4t", 4, 8),
    "tpu-v4-128": ("tpu-v4-podslice", "4x4x4", "ct4p-hightpu-4t", 4, 16),
    "tpu-v4-256": ("tpu-v4-podslice", "4x4x8", "ct4p-hightpu-4t", 4, 32),
    "tpu-v5e-1": (_V5E, "1x1", "ct5lp-hightpu-1t", 1, 1),
    "tpu-v5e-4": (_V5E, "2x2", "ct5lp-hightpu-4t", 4, 1),
    "tpu-v5e-8": (_V5E, "2x4", "ct5lp-hightpu-8t", 8, 1),
    "tpu-v5e-8-multihost": (_V5E, "2x4", "ct5lp-hightpu-4t", 4, 2),
    "tpu-v5e-16": (_V5E, "4x4", "ct5lp-hightpu-4t", 4, 4),
    "tpu-v5e-32": (_V5E, "4x8", "ct5lp-hightpu-4t", 4, 8),
    "tpu-v5e-64": (_V5E, "8x8", "ct5lp-hightpu-4t", 4, 16),
    "tpu-v5e-128": (_V5E, "8x16", "ct5lp-hightpu-4t", 4, 32),
    "tpu-v5e-256": (_V5E, "16x16", "ct5lp-hightpu-4t", 4, 64),
    "tpu-v5p-8": ("tpu-v5p-slice", "2x2x1", "ct5p-hightpu-4t", 4, 1),
    "tpu-v5p-16": ("tpu-v5p-slice", "2x2x2", "ct5p-hightpu-4t", 4, 2),
    "tpu-v5p-32": ("tpu-v5p-slice", "2x2x4", "ct5p-hightpu-4t", 4, 4),
    "tpu-v5p-64": ("tpu-v5p-slice", "2x4x4", "ct5p-hightpu-4t", 4, 8),
    "tpu-v5p-128": ("tpu-v5p-slice", "4x4x4", "ct5p-hightpu-4t", 4, 16),
    "tpu-v5p-256": ("tpu-v5p-slice", "4x4x8", "ct5p-hightpu-4t", 4, 32),
    "tpu-v6e-1": (_V6E, "1x1", "ct6e-standard-1t", 1, 1),
    "tpu-v6e-4": (_V6E, "2x2", "ct6e-standard-4t", 4, 1),
    "tpu-v6e-8": (_V6E, "2x4", "ct6e-standard-8t", 8, 1),
    "tpu-v6e-16": (_V6E, "4x4", "ct6e-standard-4t", 4, 4),
    "tpu-v6e-32": (_V6E, "4x8", "ct6e-standard-4t", 4, 8),
    "tpu-v6e-64": (_V6E, "8x8", "ct6e-standard-4t", 4, 16),
    "tpu-v6e-128": (_V6E, "8x16", "ct6e-standard-4t", 4, 32),
    "tpu-v6e-256": (_V6E, "16x16", "ct6e-standard-4t", 4, 64),
    "tpu-v7x-4": (_V7X, "2x2x1", "tpu7x-standard-4t", 4, 1),
    "tpu-v7x-8": (_V7X, "2x2x2", "tpu7x-standard-4t", 4, 2),
    "tpu-v7x-16": (_V7X, "2x2x4", "tpu7x-standard-4t", 4, 4),
    "tpu-v7x-32": (_V7X, "2x4x4", "tpu7x-standard-4t", 4, 8),
    "tpu-v7x-64": (_V7X, "4x4x4", "tpu7x-standard-4t", 4, 16),
}


@pytest.mark.parametrize(("name", "expected"), TPU_TABLE.items())
def test_every_tpu_shape_matches_gke(name: str, expected: tuple[str, str, str, int, int]) -> None:
    acc = parse_accelerator(name)
    shape = (acc.k8s_accelerator, acc.topology, acc.machine_type, acc.chips_per_host, acc.hosts)
    assert shape == expected
    assert acc.name == name


def test_the_tpu_table_is_the_whole_catalogue() -> None:
    listed = [name for name in valid_accelerator_names() if name.startswith("tpu-")]
    assert listed == list(TPU_TABLE)
    assert {parse_accelerator(name).type for name in listed} == set(TPU_GENERATIONS)


@pytest.mark.parametrize(
    ("name", "canonical", "hosts", "chips_per_host", "machine_type"),
    [
        # The FAQ: "tpu-v6e-8 is 8 chips; tpu-v5litepod-2x4 is a 2x4 slice across hosts".
        ("tpu-v6e-8", "tpu-v6e-8", 1, 8, "ct6e-standard-8t"),
        ("tpu-v5litepod-2x4", "tpu-v5e-8-multihost", 2, 4, "ct5lp-hightpu-4t"),
        # Counts keep meaning the single 8-chip host, as Cloud TPU's v5litepod-8 does.
        ("tpu-v5e-8", "tpu-v5e-8", 1, 8, "ct5lp-hightpu-8t"),
        ("tpu-v5litepod-8", "tpu-v5e-8", 1, 8, "ct5lp-hightpu-8t"),
        # The suffixes make either form explicit on either spelling.
        ("tpu-v5e-8-multihost", "tpu-v5e-8-multihost", 2, 4, "ct5lp-hightpu-4t"),
        ("tpu-v5e-2x4-multihost", "tpu-v5e-8-multihost", 2, 4, "ct5lp-hightpu-4t"),
        ("tpu-v5e-8-singlehost", "tpu-v5e-8", 1, 8, "ct5lp-hightpu-8t"),
        ("tpu-v5litepod-2x4-singlehost", "tpu-v5e-8", 1, 8, "ct5lp-hightpu-8t"),
        # Where a size has one form, the topology and the matching suffix name it too.
        ("tpu-v6e-2x4", "tpu-v6e-8", 1, 8, "ct6e-standard-8t"),
        ("tpu-v5e-16-multihost", "tpu-v5e-16", 4, 4, "ct5lp-hightpu-4t"),
        ("tpu-v5e-4-singlehost", "tpu-v5e-4", 1, 4, "ct5lp-hightpu-4t"),
    ],
)
def test_single_and_multi_host_forms(
    name: str, canonical: str, hosts: int, chips_per_host: int, machine_type: str
) -> None:
    acc = parse_accelerator(name)
    assert (acc.name, acc.hosts, acc.chips_per_host, acc.machine_type) == (
        canonical,
        hosts,
        chips_per_host,
        machine_type,
    )


def test_every_listed_name_parses_to_itself() -> None:
    names = valid_accelerator_names()
    assert len(names) == len(set(names))
    assert {"cpu", "gpu-l4", "tpu-v5e-8", "tpu-v5e-8-multihost", "tpu-v6e-8"} <= set(names)
    for name in names:
        assert parse_accelerator(name).name == name


@pytest.mark.parametrize(
    ("name", "why", "suggestion"),
    [
        ("tpu-v5e-3", "v5e sizes are 1, 4, 8, 16,", "'tpu-v5e-4'"),
        ("gpu-l5", "not a known", "'gpu-l4'"),
        ("gpu-l4-x3", "counts of", "'gpu-l4-x2'"),
        ("tpu-v9-8", "unknown TPU generation 'v9'", "'tpu-v4-8'"),
        ("tpu-v5e-2x3", "v5e topologies are", ""),
        ("a100x8", "not a known", "'gpu-a100-x8'"),
        ("tpu-v5e", "TPU names look like", ""),
        ("tpu-v6e-16-singlehost", "only runs across 4 hosts", "'tpu-v6e-16'"),
        ("tpu-v6e-8-multihost", "no multi-host form", "'tpu-v6e-8'"),
        ("tpu-v7x-2x2x8", "v7x topologies are 2x2x1, 2x2x2", ""),
    ],
)
def test_invalid_names_say_why_and_suggest_valid_ones(name: str, why: str, suggestion: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_accelerator(name)
    message = str(caught.value)
    assert f"Unknown accelerator {name!r}" in message
    assert why in message
    if suggestion:
        assert "Did you mean" in message and suggestion in message
    assert "v5e" in message and "l4" in message, "the message lists the valid families"


@pytest.mark.parametrize("value", ["", "   ", None, 8])
def test_non_names_are_refused(value: object) -> None:
    with pytest.raises(ConfigError, match="expected a non-empty string"):
        parse_accelerator(value)  # type: ignore[arg-type]
