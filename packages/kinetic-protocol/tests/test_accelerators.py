"""Accelerator names parse to what they mean; bad names are refused with the nearest valid ones."""

import pytest

from kinetic_protocol import ConfigError, parse_accelerator, valid_accelerator_names


@pytest.mark.parametrize(
    ("name", "canonical", "category", "kind", "count", "topology", "hosts", "k8s"),
    [
        ("cpu", "cpu", "cpu", "", 0, "", 1, ""),
        ("gpu-l4", "gpu-l4", "gpu", "l4", 1, "", 1, "nvidia-l4"),
        ("l4", "gpu-l4", "gpu", "l4", 1, "", 1, "nvidia-l4"),
        ("GPU-L4", "gpu-l4", "gpu", "l4", 1, "", 1, "nvidia-l4"),
        ("gpu-a100-x8", "gpu-a100-x8", "gpu", "a100", 8, "", 1, "nvidia-tesla-a100"),
        ("gpu-a100-80gb", "gpu-a100-80gb", "gpu", "a100-80gb", 1, "", 1, "nvidia-a100-80gb"),
        ("tpu-v5e-1", "tpu-v5e-1", "tpu", "v5e", 1, "1x1", 1, "tpu-v5-lite-podslice"),
        ("tpu-v5litepod-4", "tpu-v5e-4", "tpu", "v5e", 4, "2x2", 1, "tpu-v5-lite-podslice"),
        ("tpu-v5litepod-2x4", "tpu-v5e-8", "tpu", "v5e", 8, "2x4", 1, "tpu-v5-lite-podslice"),
        ("tpu-v6e-8", "tpu-v6e-8", "tpu", "v6e", 8, "2x4", 1, "tpu-v6e-slice"),
        ("tpu-v5e-16", "tpu-v5e-16", "tpu", "v5e", 16, "4x4", 4, "tpu-v5-lite-podslice"),
        # v3, v4 and v5p names count TensorCores, two per chip.
        ("tpu-v3-8", "tpu-v3-8", "tpu", "v3", 4, "2x2", 1, "tpu-v3-slice"),
        ("tpu-v4-8", "tpu-v4-8", "tpu", "v4", 4, "2x2x1", 1, "tpu-v4-podslice"),
        ("tpu-v5p-16", "tpu-v5p-16", "tpu", "v5p", 8, "2x2x2", 2, "tpu-v5p-slice"),
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
        canonical, category, kind, count, topology, hosts,
    )  # fmt: skip
    assert acc.k8s_accelerator == k8s
    assert acc.multi_host is (hosts > 1)
    if category == "tpu":
        assert acc.chips_per_host * acc.hosts == acc.count


def test_every_listed_name_parses_to_itself() -> None:
    names = valid_accelerator_names()
    assert len(names) == len(set(names))
    assert {"cpu", "gpu-l4", "tpu-v5e-8", "tpu-v6e-8"} <= set(names)
    for name in names:
        assert parse_accelerator(name).name == name


@pytest.mark.parametrize(
    ("name", "why", "suggestion"),
    [
        ("tpu-v5e-3", "v5e sizes are", "'tpu-v5e-4'"),
        ("gpu-l5", "not a known", "'gpu-l4'"),
        ("gpu-l4-x3", "counts of", "'gpu-l4-x2'"),
        ("tpu-v9-8", "unknown TPU generation 'v9'", "'tpu-v6e-8'"),
        ("tpu-v5e-2x3", "v5e topologies are", ""),
        ("a100x8", "not a known", "'gpu-a100-x8'"),
        ("tpu-v5e", "TPU names look like", ""),
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
