"""``nodes=`` and ``slices=``: every combination that cannot run is refused at decoration,
naming the rule and the value; what can run reaches the job's record, and an older record
without them reads as one node and one slice (issue 51)."""

import os
from pathlib import Path

import msgspec
import pytest

import kinetic
from kinetic.config import resolve_settings
from kinetic.submission.target import _check_host_groups
from kinetic_protocol import Capabilities, ConfigError, JobRecord, parse_accelerator
from kinetic_protocol.host_groups import job_hosts


def _noop() -> None:
    """A function to decorate."""


@pytest.mark.parametrize(
    ("options", "error", "message"),
    [
        ({"nodes": 0}, ConfigError, r"nodes=0 must be 1 or more: how many hosts"),
        ({"nodes": -2}, ConfigError, r"nodes=-2 must be 1 or more"),
        ({"slices": 0, "accelerator": "tpu-v5e-16"}, ConfigError, r"slices=0 must be 1 or more"),
        ({"nodes": 1.5}, TypeError, r"nodes must be a positive int .* got float 1\.5"),
        ({"nodes": True}, TypeError, r"nodes must be a positive int .* got bool True"),
        ({"slices": "2"}, TypeError, r"slices must be a positive int .* got str '2'"),
        (
            {"slices": 2, "accelerator": "gpu-h100-x8"},
            ConfigError,
            r"slices=2 needs a TPU accelerator, and 'gpu-h100-x8' is a GPU.* pass nodes=2",
        ),
        (
            {"slices": 3, "accelerator": "cpu"},
            ConfigError,
            r"slices=3 needs a TPU accelerator, and 'cpu' is CPU",
        ),
        (
            {"nodes": 2, "accelerator": "tpu-v5e-16"},
            ConfigError,
            r"nodes=2 does not apply to the TPU accelerator 'tpu-v5e-16'.*4 hosts.*slices=2",
        ),
        (
            {"nodes": 4, "accelerator": "tpu-v5e-8"},
            ConfigError,
            r"nodes=4 does not apply to the TPU accelerator 'tpu-v5e-8'.*one host.*slices=4",
        ),
    ],
)
def test_a_shape_that_cannot_run_is_refused_at_decoration(
    options: dict[str, object], error: type[Exception], message: str
) -> None:
    options = {"accelerator": "cpu", "backend": "local", **options}
    with pytest.raises(error, match=message):
        kinetic.run(**options)(_noop)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("accelerator", "nodes", "slices", "hosts"),
    [
        ("cpu", 2, 1, 2),  # CPU-only distributed work, and a GPU program tried on a laptop
        ("gpu-h100-x8", 4, 1, 4),
        ("tpu-v5e-16", 1, 2, 8),  # 2 slices of 4 hosts
        ("tpu-v5e-8", 1, 3, 3),  # single-host slices joined by the network
        ("tpu-v5e-16", 1, 1, 4),
    ],
)
def test_a_shape_that_can_run_counts_its_hosts(
    accelerator: str, nodes: int, slices: int, hosts: int
) -> None:
    remote = kinetic.run(accelerator=accelerator, nodes=nodes, slices=slices)(_noop)
    assert (remote.options.nodes, remote.options.slices) == (nodes, slices)
    assert job_hosts(parse_accelerator(accelerator), nodes, slices) == hosts


def test_an_older_record_reads_as_one_node_and_one_slice() -> None:
    fields = {
        "job_id": "j",
        "backend": "gke",
        "project": "p",
        "cluster_name": "c",
        "zone": "z",
        "namespace": "n",
        "bucket_name": "b",
        "k8s_name": "j",
        "image_uri": "",
        "accelerator": "gpu-l4",
        "func_name": "f",
        "display_name": "f on gpu-l4",
        "created_at": "2026-01-01T00:00:00+00:00",
    }
    old = msgspec.json.decode(msgspec.json.encode(fields), type=JobRecord)
    assert (old.nodes, old.slices) == (1, 1)
    new = msgspec.structs.replace(old, nodes=4)
    assert msgspec.json.decode(msgspec.json.encode(new), type=JobRecord).nodes == 4


def test_a_backend_without_host_groups_is_refused_naming_those_with_them() -> None:
    options = kinetic.run(accelerator="tpu-v5e-16", slices=2)(_noop).options
    refused = r"'example' backend .* cannot run slices=2\. .*: .*local"
    with pytest.raises(ConfigError, match=refused):
        _check_host_groups("example", Capabilities(), options)
    _check_host_groups("local", Capabilities(host_groups=True), options)
    single = kinetic.run(accelerator="cpu")(_noop).options
    _check_host_groups("example", Capabilities(), single)


def test_several_slices_default_to_gke_where_one_slice_defaults_to_pathways(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in list(os.environ):
        if name.startswith("KINETIC_") or name == "GOOGLE_CLOUD_PROJECT":
            monkeypatch.delenv(name)
    monkeypatch.setenv("KINETIC_PROFILES_FILE", str(tmp_path / "profiles.json"))
    slice_shape = parse_accelerator("tpu-v5e-16")
    one = resolve_settings(project="p", accelerator=slice_shape, quiet=True)
    assert one.backend.value == "pathways"
    two = resolve_settings(project="p", accelerator=slice_shape, slices=2, quiet=True)
    assert two.backend.value == "gke"
