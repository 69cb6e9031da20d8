"""resolve_image: mode selection, URIs, base_image_repo precedence, custom validation."""

import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from kinetic_gke.images import (
    ImageBuilder,
    ResolvedImage,
    build_context,
    discover_requirements,
    kinetic_version,
    region_from_zone,
    resolve_image,
)
from kinetic_gke.images.dockerfile import LIBTPU_FIND_LINKS, Category
from kinetic_gke.images.local_wheels import local_runtime_wheels
from kinetic_protocol.accelerators import parse_accelerator
from kinetic_protocol.errors import ConfigError
from kinetic_protocol.requirements import Requirements
from kinetic_testing.cloudbuild_fake import FakeCloudBuild

WriteFiles = Callable[[Path, dict[str, str]], Path]
"""The ``write`` fixture: create files (relative path -> text) under a root, return it."""


PY = f"py{sys.version_info.major}{sys.version_info.minor}"


def _resolve(
    project_root: Path,
    container_image: str | None = None,
    *,
    accelerator: str = "cpu",
    base_image_repo: str | None = None,
    builder: ImageBuilder | None = None,
    project: str = "proj",
    zone: str = "us-central1-a",
) -> ResolvedImage:
    return resolve_image(
        container_image=container_image,
        base_image_repo=base_image_repo,
        accelerator=parse_accelerator(accelerator),
        project_root=project_root,
        project=project,
        zone=zone,
        builder=builder,
    )


@pytest.mark.parametrize("choice", [None, "bundled", " bundled "])
def test_default_and_bundled_build_a_hash_tagged_image(
    write: WriteFiles,
    tmp_path: Path,
    builder: ImageBuilder,
    fake_cloudbuild: FakeCloudBuild,
    choice: str | None,
) -> None:
    write(tmp_path, {"requirements.txt": "numpy\n"})
    resolved = _resolve(tmp_path, choice, accelerator="gpu-l4", builder=builder)
    expected = build_context(
        discover_requirements(tmp_path),
        category="gpu",
        kinetic_version=kinetic_version(),
        runtime_wheels=local_runtime_wheels(),
    ).content_hash[:16]
    assert resolved == ResolvedImage(
        uri=f"us-central1-docker.pkg.dev/proj/kinetic/gpu:{expected}",
        mode="bundled",
        requirements=[],
    )
    assert fake_cloudbuild.has_image(resolved.uri)
    assert fake_cloudbuild.create_calls == 1


def test_unchanged_project_reuses_the_image_and_a_change_rebuilds(
    write: WriteFiles, tmp_path: Path, builder: ImageBuilder, fake_cloudbuild: FakeCloudBuild
) -> None:
    write(tmp_path, {"requirements.txt": "numpy\n", "main.py": "x = 1\n"})
    first = _resolve(tmp_path, builder=builder)
    write(tmp_path, {"main.py": "x = 2\n"})  # code changes travel in the bundle
    assert _resolve(tmp_path, builder=builder) == first
    assert fake_cloudbuild.create_calls == 1
    write(tmp_path, {"requirements.txt": "numpy\nscipy\n"})
    second = _resolve(tmp_path, builder=builder)
    assert second.uri != first.uri
    assert fake_cloudbuild.create_calls == 2


def test_the_image_lives_in_the_region_of_the_zone(tmp_path: Path, builder: ImageBuilder) -> None:
    resolved = _resolve(tmp_path, accelerator="tpu-v5e-8", zone="europe-west4-b", builder=builder)
    assert resolved.uri.startswith("europe-west4-docker.pkg.dev/proj/kinetic/tpu:")


def test_bundled_without_a_project_explains_the_options(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="KINETIC_PROJECT"):
        _resolve(tmp_path, project="")


def test_prebuilt_uses_the_base_image_and_hands_requirements_to_the_pod(
    write: WriteFiles,
    tmp_path: Path,
    builder: ImageBuilder,
    fake_cloudbuild: FakeCloudBuild,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("KINETIC_BASE_IMAGE_REPO", raising=False)
    write(tmp_path, {"requirements.txt": "# deps\nnumpy==1.26.4\n\noptax\n"})
    resolved = _resolve(tmp_path, "prebuilt", accelerator="gpu-a100", builder=builder)
    assert resolved == ResolvedImage(
        uri=f"kinetic/kinetic-gpu:{kinetic_version()}-{PY}",
        mode="prebuilt",
        requirements=["numpy==1.26.4", "optax", "jax[cuda12]"],
    )
    assert fake_cloudbuild.create_calls == 0
    assert fake_cloudbuild.manifest_requests == 0


def test_prebuilt_repo_argument_beats_env_which_beats_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("KINETIC_BASE_IMAGE_REPO", raising=False)
    version = kinetic_version()
    assert _resolve(tmp_path, "prebuilt").uri == f"kinetic/kinetic-cpu:{version}-{PY}"
    monkeypatch.setenv("KINETIC_BASE_IMAGE_REPO", "envco/kin")
    assert _resolve(tmp_path, "prebuilt").uri == f"envco/kin/kinetic-cpu:{version}-{PY}"
    assert (
        _resolve(tmp_path, "prebuilt", base_image_repo="us-docker.pkg.dev/p/r/").uri
        == f"us-docker.pkg.dev/p/r/kinetic-cpu:{version}-{PY}"
    )


def test_prebuilt_with_no_requirements_installs_nothing(tmp_path: Path) -> None:
    assert _resolve(tmp_path, "prebuilt", accelerator="tpu-v5e-1").requirements == []


@pytest.mark.parametrize(
    ("accelerator", "lines", "expected"),
    [
        ("tpu-v5e-1", "flax\n", ["flax", "jax[tpu]"]),
        ("gpu-l4", "flax\n", ["flax", "jax[cuda12]"]),
        (
            "tpu-v5e-1",
            "jax>=0.4.30\nflax\n",
            ["jax[tpu]>=0.4.30", "flax"],
        ),
        (
            "tpu-v5e-1",
            "jax==0.4.35\nflax\n",
            ["jax[tpu]==0.4.35", "flax", f"--find-links {LIBTPU_FIND_LINKS}"],
        ),
        ("gpu-l4", "jax==0.4.30\n", ["jax[cuda12]==0.4.30"]),
        ("gpu-l4", "jax[cpu]==0.4.30\n", ["jax[cpu]==0.4.30"]),
        ("cpu", "flax\n", ["flax"]),
    ],
)
def test_prebuilt_keeps_the_jax_build_unless_the_user_names_jax(
    write: WriteFiles, tmp_path: Path, accelerator: str, lines: str, expected: list[str]
) -> None:
    write(tmp_path, {"requirements.txt": lines})
    assert _resolve(tmp_path, "prebuilt", accelerator=accelerator).requirements == expected


@pytest.mark.parametrize("choice", ["prebuilt", "bundled"])
def test_installing_the_users_jax_as_another_build_is_said_once(
    write: WriteFiles,
    tmp_path: Path,
    builder: ImageBuilder,
    choice: str,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from kinetic_gke.images import resolve

    monkeypatch.setattr(resolve, "_said", set())
    write(tmp_path, {"requirements.txt": "jax>=0.4.30\noptax\n"})
    with caplog.at_level("WARNING", logger="kinetic"):
        for _ in range(2):
            _resolve(tmp_path, choice, accelerator="tpu-v5e-1", builder=builder)
    said = [r.getMessage() for r in caplog.records if "jax[tpu]>=0.4.30" in r.getMessage()]
    assert len(said) == 1, caplog.text
    assert "'jax>=0.4.30' as 'jax[tpu]>=0.4.30'" in said[0]
    assert "jax[cpu]" in said[0], "says how to keep a build of one's own"


def test_nothing_is_said_when_the_users_jax_is_kept(
    write: WriteFiles, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    write(tmp_path, {"requirements.txt": "jax[cpu]>=0.4.30\n"})
    with caplog.at_level("WARNING", logger="kinetic"):
        _resolve(tmp_path, "prebuilt", accelerator="tpu-v5e-1")
    assert "jax" not in caplog.text


@pytest.mark.parametrize(("category", "jax"), [("tpu", "'jax[tpu]'"), ("gpu", "'jax[cuda12]'")])
def test_prebuilt_base_images_carry_the_jax_build(category: Category, jax: str) -> None:
    base = build_context(
        Requirements(lines=(), source=""), category=category, kinetic_version="1.0"
    ).dockerfile
    assert jax in base


def test_prebuilt_with_an_invalid_repo_fails_early(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not a container image reference"):
        _resolve(tmp_path, "prebuilt", base_image_repo="My Company/kinetic")


@pytest.mark.parametrize(
    "uri",
    [
        "us-docker.pkg.dev/p/r/trainer:v3",
        "python:3.11-slim",
        "ghcr.io/org/img@sha256:" + "ab" * 32,
        "localhost:5000/dev/img",
    ],
)
def test_any_other_string_is_a_custom_image_used_as_is(
    write: WriteFiles,
    tmp_path: Path,
    builder: ImageBuilder,
    fake_cloudbuild: FakeCloudBuild,
    uri: str,
) -> None:
    write(tmp_path, {"requirements.txt": "numpy\n"})
    assert _resolve(tmp_path, uri, builder=builder) == ResolvedImage(uri=uri, mode="custom")
    assert fake_cloudbuild.create_calls == 0


@pytest.mark.parametrize(
    "bad", ["my image", "", "   ", "Upper/Case:tag", "repo/img:", "a/b@sha256:xyz", "http://x/y"]
)
def test_obviously_wrong_custom_images_are_config_errors(tmp_path: Path, bad: str) -> None:
    with pytest.raises(ConfigError, match="container_image"):
        _resolve(tmp_path, bad)


@pytest.mark.parametrize(
    ("zone", "region"),
    [
        ("us-central1-a", "us-central1"),
        ("europe-west4-b", "europe-west4"),
        ("northamerica-northeast1-c", "northamerica-northeast1"),
        ("us-east5", "us-east5"),
    ],
)
def test_region_from_zone(zone: str, region: str) -> None:
    assert region_from_zone(zone) == region


@pytest.mark.parametrize("zone", ["", "us central1", "central", "US-CENTRAL1-A"])
def test_bad_zone_is_a_config_error(zone: str) -> None:
    with pytest.raises(ConfigError, match="zone"):
        region_from_zone(zone)


def test_prebuilt_images_install_the_hf_extra_at_pod_start_when_a_call_needs_it(
    write: WriteFiles, tmp_path: Path
) -> None:
    write(tmp_path, {"requirements.txt": "numpy\n"})
    resolved = resolve_image(
        container_image="prebuilt",
        base_image_repo=None,
        accelerator=parse_accelerator("cpu"),
        project_root=tmp_path,
        project="proj",
        zone="us-central1-a",
        runtime_extras=("hf",),
    )
    assert resolved.requirements == ["numpy", f"kinetic-runtime[gcs,debug,hf]=={kinetic_version()}"]
