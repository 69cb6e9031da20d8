"""Fixtures for the image tests: the Cloud Build fake and the real client wired to it."""

from collections.abc import Iterator
from typing import Any

import pytest

from kinetic_gke.images import ImageBuilder, RegistryClient
from kinetic_testing.cloudbuild_fake import FakeCloudBuild


@pytest.fixture
def fake_cloudbuild() -> Iterator[FakeCloudBuild]:
    """A started fake on a random 127.0.0.1 port, always stopped afterwards."""
    with FakeCloudBuild(polls_until_done=2) as fake:
        yield fake


@pytest.fixture
def cloudbuild_client(fake_cloudbuild: FakeCloudBuild) -> Any:
    """The real google-cloud-build client, over REST, talking to the fake."""
    from google.api_core.client_options import ClientOptions
    from google.auth.credentials import AnonymousCredentials
    from google.cloud.devtools.cloudbuild_v1 import CloudBuildClient

    return CloudBuildClient(
        transport="rest",
        client_options=ClientOptions(api_endpoint=fake_cloudbuild.url),
        credentials=AnonymousCredentials(),  # type: ignore[no-untyped-call]
    )


@pytest.fixture
def builder(fake_cloudbuild: FakeCloudBuild, cloudbuild_client: Any) -> ImageBuilder:
    """An ImageBuilder whose every outside call goes to the fake, polling fast."""
    return ImageBuilder(
        project="proj",
        location="us-central1",
        client=cloudbuild_client,
        registry=RegistryClient(endpoint=fake_cloudbuild.url, token=lambda: None),
        log_fetcher=fake_cloudbuild.read_log,
        timeout=30.0,
        poll_interval=(0.01, 0.05),
    )
