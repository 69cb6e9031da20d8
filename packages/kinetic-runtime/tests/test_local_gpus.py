"""Which GPUs each host of a local multi-host job is given."""

from pathlib import Path

import pytest

from kinetic_runtime.local.gpus import host_devices, visible_gpus


def test_the_device_files_name_the_gpus_in_numeric_order(tmp_path: Path) -> None:
    for name in ("nvidia10", "nvidia2", "nvidiactl", "nvidia-uvm", "nvidia0", "null"):
        (tmp_path / name).touch()
    assert visible_gpus({}, dev=str(tmp_path)) == ["0", "2", "10"]


def test_cuda_visible_devices_wins_over_the_device_files_and_stops_at_minus_one(
    tmp_path: Path,
) -> None:
    (tmp_path / "nvidia0").touch()
    assert visible_gpus({"CUDA_VISIBLE_DEVICES": "GPU-ab, 2,-1,3"}, dev=str(tmp_path)) == [
        "GPU-ab",
        "2",
    ]
    assert visible_gpus({"CUDA_VISIBLE_DEVICES": ""}, dev=str(tmp_path)) == []


def test_a_machine_without_a_dev_directory_has_no_gpus(tmp_path: Path) -> None:
    assert visible_gpus({}, dev=str(tmp_path / "missing")) == []


@pytest.mark.parametrize(
    ("gpus", "expected"),
    [
        (["0", "1"], ["0", "1"]),
        (["0", "1", "2", "3"], ["0,1", "2,3"]),
        (["4", "5", "6"], ["4", "5"]),
    ],
)
def test_enough_gpus_are_split_into_equal_blocks(gpus: list[str], expected: list[str]) -> None:
    given = [host_devices(gpus, 2, host, {}) for host in (0, 1)]
    assert [d.env["CUDA_VISIBLE_DEVICES"] for d in given] == expected
    assert all("JAX_PLATFORMS" not in d.env for d in given)


def test_too_few_gpus_put_every_host_on_the_cpu_and_say_so() -> None:
    given = host_devices(["0"], 4, 2, {})
    assert given.env == {"CUDA_VISIBLE_DEVICES": "", "JAX_PLATFORMS": "cpu"}
    assert "4 hosts but 1 GPU(s)" in given.notice and "at least 4" in given.notice


def test_a_platform_the_user_chose_is_left_alone() -> None:
    given = host_devices(["0"], 2, 0, {"JAX_PLATFORMS": "cuda"})
    assert given.env == {"CUDA_VISIBLE_DEVICES": ""}


@pytest.mark.parametrize(("gpus", "hosts"), [([], 2), (["0"], 1)])
def test_one_host_or_no_gpu_changes_nothing(gpus: list[str], hosts: int) -> None:
    given = host_devices(gpus, hosts, 0, {})
    assert given.env == {} and given.notice == ""
