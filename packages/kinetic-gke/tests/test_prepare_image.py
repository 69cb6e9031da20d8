"""``GKEBackend.prepare`` resolves its jobs' image from the user's choice: the image's URI and,
for a prebuilt one, the requirements each pod installs when it starts (no build, no cluster)."""

from pathlib import Path

import pytest

from kinetic_gke import GKEBackend
from kinetic_gke.images import prebuilt_image_uri
from kinetic_gke.queueing.kueue_view import KueueView
from kinetic_protocol import BackendSettings, ConfigError, PrepareRequest, parse_accelerator

CUSTOM = "us-docker.pkg.dev/p/r/mine:1"


SETTINGS = BackendSettings(project="p", zone="us-central1-a", store_uri="gs://b")


@pytest.fixture
def backend(monkeypatch: pytest.MonkeyPatch) -> GKEBackend:
    for name in ("KINETIC_CONTAINER_IMAGE", "KINETIC_BASE_IMAGE_REPO"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(KueueView, "served", False)  # a cluster without Kueue, never reached
    return GKEBackend(SETTINGS)


def _request(root: Path, **choice: object) -> PrepareRequest:
    return PrepareRequest(accelerator=parse_accelerator("cpu"), project_root=root, **choice)  # type: ignore[arg-type]


def test_a_prebuilt_image_comes_with_the_projects_requirements(
    backend: GKEBackend, tmp_path: Path
) -> None:
    (tmp_path / "requirements.txt").write_text("numpy==2.1\n")
    prepared = backend.prepare(
        _request(tmp_path, container_image="prebuilt", base_image_repo="us-docker.pkg.dev/p/base")
    )
    assert prepared.image == prebuilt_image_uri("us-docker.pkg.dev/p/base", "cpu")
    assert prepared.requirements == ("numpy==2.1",)


def test_hf_data_adds_the_runtime_extra_to_what_pods_install(
    backend: GKEBackend, tmp_path: Path
) -> None:
    prepared = backend.prepare(
        _request(tmp_path, container_image="prebuilt", runtime_extras=("hf",))
    )
    runtime = [line for line in prepared.requirements if line.startswith("kinetic-runtime[")]
    assert len(runtime) == 1 and "hf" in runtime[0]


def test_without_a_choice_the_variable_names_the_image(
    backend: GKEBackend, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The variable as it was when the backend was built (the client builds a fresh backend
    when it changes)."""
    monkeypatch.setenv("KINETIC_CONTAINER_IMAGE", CUSTOM)
    built_after = GKEBackend(SETTINGS)
    prepared = built_after.prepare(_request(tmp_path))
    assert (prepared.image, prepared.requirements) == (CUSTOM, ())
    assert built_after.prepare(_request(tmp_path, container_image="prebuilt")).image != CUSTOM
    monkeypatch.setenv("KINETIC_CONTAINER_IMAGE", "us-docker.pkg.dev/p/r/changed-after:1")
    assert built_after.prepare(_request(tmp_path)).image == CUSTOM


def test_a_malformed_image_is_refused_in_prepare(backend: GKEBackend, tmp_path: Path) -> None:
    with pytest.raises(ConfigError):
        backend.prepare(_request(tmp_path, container_image="Not An Image!"))
