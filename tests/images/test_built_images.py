"""Kinetic's generated images, built by buildah from the stand-in bases, run jobs as uid 1000.

Each test takes the build context exactly as Kinetic generates it (through ``resolve_image``
or ``build_base_images``), builds it, and runs ``python -m kinetic_runtime`` in the image
against fake-gcs-server. The job reports where its runtime and packages come from, so the
assertions are about the image's own ``/opt/venv``, not this machine's environment.
"""

import hashlib
from importlib.metadata import version
from pathlib import Path
from typing import Any

import pytest
from image_jobs import IMAGE_SITE, PROBE, BucketJobs, BuildahImageBuilder, job_function

import kinetic_runtime
from kinetic_gke.images import build_base_images, kinetic_version, resolve_image
from kinetic_protocol.accelerators import parse_accelerator
from kinetic_testing.fake_gcs import FakeGcsServer
from kinetic_testing.images.fixtures import ImageBuilds

pytestmark = [pytest.mark.images, pytest.mark.gcs, pytest.mark.slow]

USER_REQUIREMENT = "six==1.16.0"
"""A small real package from PyPI that nothing of Kinetic's depends on."""


@pytest.fixture
def jobs(fake_gcs: FakeGcsServer, gcs_bucket: str, tmp_path: Path) -> BucketJobs:
    return BucketJobs(gcs_bucket, fake_gcs.endpoint, tmp_path)


def _this_runtime() -> str:
    main = Path(kinetic_runtime.__file__).parent / "main.py"
    return hashlib.sha256(main.read_bytes()).hexdigest()


def _probe(jobs: BucketJobs, builds: ImageBuilds, image: str, **stage: Any) -> dict[str, Any]:
    job_id = jobs.stage(job_function(PROBE, "probe"), **stage)
    found: dict[str, Any] = jobs.run_in(builds, image, job_id).value()
    return found


def test_a_bundled_cpu_image_runs_a_job_with_the_users_requirement_as_uid_1000(
    image_builds: ImageBuilds, jobs: BucketJobs, tmp_path: Path
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "requirements.txt").write_text(f"{USER_REQUIREMENT}\n")
    builder = BuildahImageBuilder(image_builds)
    resolved = resolve_image(
        container_image="bundled",
        base_image_repo=None,
        accelerator=parse_accelerator("cpu"),
        project_root=project,
        project="test",
        zone="us-central1-a",
        builder=builder,
    )
    found = _probe(jobs, image_builds, builder.local_tags[resolved.uri])
    assert (found["uid"], found["gid"]) == (1000, 1000)
    assert found["python"] == "/opt/venv/bin/python"
    assert found["six"] == f"{IMAGE_SITE}/six.py"
    assert found["runtime"] == f"{IMAGE_SITE}/kinetic_runtime"


def test_a_source_checkout_builds_an_image_whose_runtime_is_its_own(
    image_builds: ImageBuilds, jobs: BucketJobs, tmp_path: Path
) -> None:
    """This workspace's kinetic-runtime is an editable install, not a release: the image
    installs the wheel made from it, and runs exactly this source's runtime."""
    builder = BuildahImageBuilder(image_builds)
    project = tmp_path / "project"
    project.mkdir()
    resolved = resolve_image(
        container_image="bundled",
        base_image_repo=None,
        accelerator=parse_accelerator("cpu"),
        project_root=project,
        project="test",
        zone="us-central1-a",
        builder=builder,
    )
    context = builder.contexts[resolved.uri]
    assert any(path.startswith("wheels/kinetic_runtime-") for path in context.files)
    found = _probe(jobs, image_builds, builder.local_tags[resolved.uri])
    assert found["runtime"] == f"{IMAGE_SITE}/kinetic_runtime"
    assert found["runtime_version"] == version("kinetic-runtime") == kinetic_version()
    assert found["runtime_main"] == _this_runtime()
    assert found["six"] is None  # the user asked for nothing: nothing extra is in the image


def test_the_prebuilt_base_installs_the_users_requirement_when_the_pod_starts(
    image_builds: ImageBuilds, jobs: BucketJobs
) -> None:
    builder = BuildahImageBuilder(image_builds)
    [uri] = build_base_images(["cpu"], "kinetic", None, builder)
    image = builder.local_tags[uri]
    before = _probe(jobs, image_builds, image)
    assert before["six"] is None and before["runtime_main"] == _this_runtime()
    found = _probe(jobs, image_builds, image, requirements=[USER_REQUIREMENT])
    assert (found["uid"], found["gid"]) == (1000, 1000)
    assert found["six"] == f"{IMAGE_SITE}/six.py"  # installed as uid 1000 into the image's venv


def test_a_prebuilt_image_of_an_unpublished_kinetic_installs_a_runtime_extra_at_pod_start(
    image_builds: ImageBuilds, jobs: BucketJobs, tmp_path: Path
) -> None:
    """A call with ``hf://`` data on a prebuilt image installs ``kinetic-runtime[...,hf]==V``
    when the pod starts, and this workspace's version V is on no index. It still works: the
    image's own runtime (from the context's wheels) satisfies the pin, so uv installs only the
    extra's requirements and keeps that runtime (this source's)."""
    builder = BuildahImageBuilder(image_builds)
    [uri] = build_base_images(["cpu"], "kinetic", None, builder)
    project = tmp_path / "project"
    project.mkdir()
    resolved = resolve_image(
        container_image="prebuilt",
        base_image_repo="kinetic",
        accelerator=parse_accelerator("cpu"),
        project_root=project,
        project="test",
        zone="us-central1-a",
        runtime_extras=("hf",),
    )
    assert resolved.uri == uri
    job_id = jobs.stage(job_function(PROBE, "probe"), requirements=resolved.requirements)
    run = jobs.run_in(image_builds, builder.local_tags[uri], job_id)
    found = run.value()
    assert str(found["datasets"]).startswith(f"{IMAGE_SITE}/datasets/"), run.output
    assert found["runtime_main"] == _this_runtime()
    assert found["runtime_version"] == kinetic_version()


TPU_PROBE = """
def tpu_probe():
    import importlib.util

    import jax

    libtpu = importlib.util.find_spec("libtpu")
    return {
        "jax": jax.__version__,
        "libtpu": libtpu.origin if libtpu else None,
        "platform": jax.devices()[0].platform,
    }
"""
"""A job reporting the JAX build of its image and the platform JAX chose."""


@pytest.mark.accelerator_images
def test_a_bundled_tpu_image_builds_from_the_package_index_with_jaxs_tpu_build(
    image_builds: ImageBuilds, jobs: BucketJobs, tmp_path: Path
) -> None:
    """The tpu image's Dockerfile, as generated, builds with nothing but the package index
    (libtpu's release index is unreachable here, as behind a mirror), and its job imports
    ``jax[tpu]`` with ``libtpu`` from the image. No TPU exists here: JAX runs on its CPU."""
    project = tmp_path / "project"
    project.mkdir()
    builder = BuildahImageBuilder(image_builds)
    resolved = resolve_image(
        container_image="bundled",
        base_image_repo=None,
        accelerator=parse_accelerator("tpu-v5e-1"),
        project_root=project,
        project="test",
        zone="us-central1-a",
        builder=builder,
    )
    assert "--find-links" not in builder.contexts[resolved.uri].dockerfile
    job_id = jobs.stage(job_function(TPU_PROBE, "tpu_probe"))
    run = jobs.run_in(image_builds, builder.local_tags[resolved.uri], job_id)
    found = run.value()
    assert str(found["libtpu"]).startswith(f"{IMAGE_SITE}/libtpu/"), run.output
    assert tuple(int(part) for part in found["jax"].split(".")[:3]) >= (0, 5, 1)
    assert found["platform"] == "cpu"
