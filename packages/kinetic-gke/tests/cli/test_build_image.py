"""``kinetic build-image`` against the Cloud Build fake, through the real client."""

from typing import Any

import pytest
from click.testing import CliRunner

from kinetic_gke.cli import images as cli_images
from kinetic_gke.images import ImageBuilder, RegistryClient
from kinetic_testing.cloudbuild_fake import FakeCloudBuild
from kinetic_testing.command_host import stand_in_command_line as cli


@pytest.fixture
def fake_builds(monkeypatch: pytest.MonkeyPatch) -> Any:
    from google.api_core.client_options import ClientOptions
    from google.auth.credentials import AnonymousCredentials
    from google.cloud.devtools.cloudbuild_v1 import CloudBuildClient

    with FakeCloudBuild(polls_until_done=1) as fake:
        made: list[tuple[str, str]] = []

        def make_builder(project: str, zone: str) -> ImageBuilder:
            made.append((project, zone))
            client = CloudBuildClient(
                transport="rest",
                client_options=ClientOptions(api_endpoint=fake.url),
                credentials=AnonymousCredentials(),  # type: ignore[no-untyped-call]
            )
            return ImageBuilder(
                project=project,
                location="us-central1",
                client=client,
                registry=RegistryClient(endpoint=fake.url, token=lambda: None),
                log_fetcher=fake.read_log,
                timeout=30.0,
                poll_interval=(0.01, 0.05),
            )

        monkeypatch.setattr(cli_images, "make_builder", make_builder)
        fake.made = made
        yield fake


def test_build_image_builds_each_requested_category_in_the_configured_project(
    fake_builds: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KINETIC_PROJECT", "proj")
    monkeypatch.setenv("KINETIC_ZONE", "us-central1-a")
    result = CliRunner().invoke(
        cli,
        ["build-image", "--category", "cpu", "--category", "gpu", "--repo", "me/kinetic", "--json"],
    )
    assert result.exit_code == 0, result.output
    assert fake_builds.create_calls == 2
    assert fake_builds.made == [("proj", "us-central1-a")]
    assert '"me/kinetic/kinetic-cpu:' in result.output
    assert '"me/kinetic/kinetic-gpu:' in result.output


def test_build_image_without_a_project_is_a_usage_error(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("KINETIC_PROJECT", "GOOGLE_CLOUD_PROJECT"):
        monkeypatch.delenv(name, raising=False)
    result = CliRunner().invoke(cli, ["build-image"])
    assert result.exit_code == 2
    assert "KINETIC_PROJECT" in result.output
