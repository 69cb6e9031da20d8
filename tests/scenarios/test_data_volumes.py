"""``volumes={path: Data}``: the job opens its data at exactly that absolute path, on every
backend that declares ``volumes`` (a pod's own volumes on Kubernetes; a private mount
namespace per job locally), while nothing appears at that path on this machine."""

import os
from pathlib import Path

import data_userfuncs as uf
import pytest
from data_support import capabilities, put_objects
from scenario_support import ScenarioBackend

import kinetic
from kinetic import Data

pytestmark = pytest.mark.gcs

PATHS = ("/data", "/srv/kinetic-test/settings.json", "/models", "/srv/kinetic-test/w/vocab.txt")


@pytest.fixture
def dataset(tmp_path: Path) -> Path:
    root = tmp_path / "dataset"
    root.mkdir()
    (root / "train.csv").write_text("x,y\n1,2\n")
    return root


@pytest.fixture
def volumes_backend(kinetic_backend: ScenarioBackend) -> ScenarioBackend:
    if not capabilities(kinetic_backend).volumes:
        pytest.skip(f"the {kinetic_backend.name} backend declares no volumes capability")
    return kinetic_backend


def _host_view() -> dict[str, bool]:
    return {path: os.path.lexists(path) for path in PATHS} | {"/data/train.csv": False}


def test_volumes_put_local_and_gs_data_at_their_absolute_paths(
    volumes_backend: ScenarioBackend, dataset: Path, tmp_path: Path, gcs_bucket: str
) -> None:
    before = _host_view()
    settings = tmp_path / "settings.json"
    settings.write_text('{"epochs": 3}')
    put_objects(gcs_bucket, {"weights/model.bin": "W", "weights/extra/vocab.txt": "V"})
    volumes = {
        "/data": Data(str(dataset)),
        "/srv/kinetic-test/settings.json": Data(str(settings)),
        "/models": Data(f"{gcs_bucket}/weights/"),
        "/srv/kinetic-test/w/vocab.txt": Data(f"{gcs_bucket}/weights/extra/vocab.txt"),
    }
    remote = volumes_backend.decorate(volumes=volumes)(uf.read_paths)
    seen = remote(*PATHS)
    assert seen == {
        "/data": {"train.csv": "x,y\n1,2\n"},
        "/srv/kinetic-test/settings.json": {"settings.json": '{"epochs": 3}'},
        "/models": {"model.bin": "W", "extra/vocab.txt": "V"},
        "/srv/kinetic-test/w/vocab.txt": {"vocab.txt": "V"},
    }
    assert {**_host_view(), "/data/train.csv": os.path.exists("/data/train.csv")} == before, (
        "only the job sees its volumes"
    )


def test_a_data_both_in_volumes_and_as_an_argument_is_staged_once_at_the_volume(
    volumes_backend: ScenarioBackend, dataset: Path
) -> None:
    data = Data(str(dataset))
    remote = volumes_backend.decorate(volumes={"/data": data})(uf.volume_and_argument)
    seen = remote(data)
    assert seen["argument"] == "/data"
    assert seen["at_volume"] == seen["via_argument"] == {"train.csv": "x,y\n1,2\n"}


def test_local_volumes_are_read_only_views_of_the_users_files(
    local_backend: ScenarioBackend, dataset: Path
) -> None:
    remote = local_backend.decorate(volumes={"/data": Data(str(dataset))})(uf.try_to_write)
    assert remote("/data/new.txt") == "Read-only file system"
    assert sorted(p.name for p in dataset.iterdir()) == ["train.csv"]


@pytest.mark.parametrize(
    ("path", "says"),
    [
        ("data", "must be an absolute mount path"),
        ("/", "whole filesystem"),
        ("/tmp", "system directory /tmp"),
        ("/proc/x", "reserved"),
        ("/kinetic/fuse", "reserved"),
        ("/a/../b", "contains '..'"),
    ],
)
def test_a_volume_path_that_cannot_be_mounted_is_refused_at_decoration(
    path: str, says: str, dataset: Path
) -> None:
    with pytest.raises(kinetic.ConfigError, match=says):
        kinetic.run(accelerator="cpu", volumes={path: Data(str(dataset))})


def test_overlapping_volumes_are_refused_at_decoration(dataset: Path) -> None:
    with pytest.raises(kinetic.ConfigError, match="overlap"):
        kinetic.run(
            accelerator="cpu",
            volumes={"/data": Data(str(dataset)), "/data/extra/": Data(str(dataset))},
        )
