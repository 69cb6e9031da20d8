"""``container_image="bundled"`` through the real ``google-cloud-build`` client and the fake
Cloud Build API, which builds with buildah: a failed build reaches the user as Cloud Build's
failure does (its status and the tail of its log, read from the logs bucket)."""

from pathlib import Path

import pytest

from kinetic_gke.images import ImageBuildError, resolve_image
from kinetic_protocol.accelerators import parse_accelerator
from kinetic_testing.cloudbuild_fake import FakeCloudBuild

pytestmark = [pytest.mark.images, pytest.mark.gcs, pytest.mark.slow]

MISSING = "kinetic-test-no-such-package-4f1c"
"""A requirement no package index has: uv fails the image's install step."""


def test_a_failed_build_reaches_the_user_with_its_status_and_log_tail(
    buildah_cloud_build: FakeCloudBuild,
    clean_kinetic_env: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("KINETIC_GCP_API_ENDPOINT", buildah_cloud_build.url)
    project = tmp_path / "project"
    project.mkdir()
    (project / "requirements.txt").write_text(f"{MISSING}==1.0\n")
    with pytest.raises(ImageBuildError) as raised:
        resolve_image(
            container_image="bundled",
            base_image_repo=None,
            accelerator=parse_accelerator("cpu"),
            project_root=project,
            project="test",
            zone="us-central1-a",
        )
    error = raised.value
    assert error.status == "FAILURE"
    assert MISSING in error.log_tail, error.log_tail  # uv's own words, from the image build
    assert "ended with status FAILURE" in str(error)
    assert buildah_cloud_build.build(error.build_id)["status"] == "FAILURE"
