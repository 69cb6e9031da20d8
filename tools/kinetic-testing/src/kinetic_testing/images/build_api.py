"""Pytest fixtures for the image tier's Cloud Build: the fake API building with buildah.

``buildah_cloud_build`` is one :class:`~kinetic_testing.cloudbuild_fake.FakeCloudBuild` for
the session whose builds run for real (:mod:`.cloud_builds`), so an image is built once per
session however many tests submit it; its logs go to a bucket on fake-gcs-server, where the
client reads a failed build's tail. ``local_images`` is what it registers the images in, for
a node agent to run pods in them. Only tests that ask for these pay for builds: the ordinary
scenarios name a custom image and never build.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from kinetic_testing.cloudbuild_fake import FakeCloudBuild
from kinetic_testing.fake_gcs import FakeGcsServer

from .cloud_builds import BuildahCloudBuilds
from .fixtures import ImageBuilds
from .pods import LocalImages

__all__ = ["buildah_cloud_build", "local_images"]

_LOGS_BUCKET = "kinetic-test-cloudbuild-logs"


@pytest.fixture(scope="session")
def local_images(image_builds: ImageBuilds) -> LocalImages:
    """The images built this session, by the reference pods name them."""
    return LocalImages(image_builds.buildah)


@pytest.fixture(scope="session")
def buildah_cloud_build(
    image_builds: ImageBuilds, local_images: LocalImages, fake_gcs: FakeGcsServer
) -> Iterator[FakeCloudBuild]:
    """The fake Cloud Build API (and registry) building with buildah; point the client at
    it with ``KINETIC_GCP_API_ENDPOINT=<its url>``."""
    from kinetic_runtime.stores import open_store

    fake_gcs.create_bucket(_LOGS_BUCKET)

    def write_log(logs_bucket: str, build_id: str, text: str) -> None:
        bucket, _, prefix = logs_bucket.removeprefix("gs://").partition("/")
        key = f"{prefix.rstrip('/')}/log-{build_id}.txt".lstrip("/")
        open_store(f"gs://{bucket}").write(key, text.encode())

    runner = BuildahCloudBuilds(image_builds, local_images)
    with FakeCloudBuild(runner=runner, log_sink=write_log) as fake:
        fake.state.logs_bucket = f"gs://{_LOGS_BUCKET}"
        yield fake
