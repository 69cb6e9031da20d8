"""Inputs a backend cannot honour yet fail clearly before anything is written or submitted."""

from pathlib import Path

import pytest

import kinetic


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, clean_kinetic_env: Path) -> None:
    monkeypatch.setenv("KINETIC_STORE", f"file://{tmp_path / 'store'}")


def _identity(x: object) -> object:
    return x


def _gke(**options: object) -> kinetic.RemoteFunction[[object], object]:
    decorate = kinetic.run(
        accelerator="cpu", backend="gke", project="proj", container_image="python:3.11-slim",
        **options,  # type: ignore[arg-type]
    )  # fmt: skip
    return decorate(_identity)


def test_volumes_on_gke_are_refused_before_submission(tmp_path: Path) -> None:
    remote = _gke(volumes={"/data": kinetic.Data(str(tmp_path))})
    with pytest.raises(kinetic.ConfigError, match="volumes are not supported on the 'gke'"):
        remote.run_async(1)
    assert not (tmp_path / "store").exists()


def test_local_data_argument_on_gke_is_refused_before_submission(tmp_path: Path) -> None:
    with pytest.raises(kinetic.ConfigError, match="refers to data on this machine"):
        _gke().run_async(kinetic.Data(str(tmp_path)))
    assert not (tmp_path / "store" / "jobs").exists()


def test_volumes_on_the_local_backend_point_to_arguments(tmp_path: Path) -> None:
    remote = kinetic.run(accelerator="cpu", backend="local", volumes={"/d": kinetic.Data("x")})
    with pytest.raises(kinetic.ConfigError, match=r"pass the kinetic\.Data"):
        remote(_identity).run_async(1)
