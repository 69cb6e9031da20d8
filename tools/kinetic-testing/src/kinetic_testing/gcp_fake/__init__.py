"""An in-process fake of the Google Cloud APIs ``kinetic up``, ``kinetic doctor`` and the
pre-flight check use: GKE, Service Usage, Compute machine types, Resource Manager, IAM and
Artifact Registry, on one HTTP port, long-running operations included, plus an OAuth token
endpoint for credentials that must yield a real token (the cluster's).

Point Kinetic at it with ``KINETIC_GCP_API_ENDPOINT=fake.url``; Cloud Storage is
fake-gcs-server's (``gcs_bucket``). Only the standard library is used (and ``cryptography``
for the key of the credentials file it writes).
"""

from __future__ import annotations

from typing import Any

from kinetic_testing.gcp_fake.apis import DEFAULT_MACHINE_TYPES, FakeApis
from kinetic_testing.gcp_fake.container import FakeContainer
from kinetic_testing.gcp_fake.server import ApiError, Route, RoutedServer

__all__ = ["DEFAULT_MACHINE_TYPES", "ApiError", "FakeGoogleCloud"]


class FakeGoogleCloud(RoutedServer):
    """Every fake API on one server: ``fake.container`` (GKE) and ``fake.apis`` (the rest)."""

    def __init__(self, *, polls_until_done: int = 2) -> None:
        super().__init__()
        self.container = FakeContainer(self, polls_until_done)  # first: it owns shared paths
        self.apis = FakeApis(self, polls_until_done)

    def add_cluster(self, project: str, location: str, body: dict[str, Any]) -> None:
        """A cluster made elsewhere, RUNNING, in a project whose GKE API is on."""
        self.apis.enable(project, "container.googleapis.com")
        self.container.add_cluster(project, location, body)

    def check_enabled(self, route: Route, groups: dict[str, str]) -> None:
        """Google refuses the calls of an API the project has not enabled."""
        project = groups.get("project", "")
        if route.service and project and not self.apis.is_enabled(project, route.service):
            raise ApiError(
                403,
                f"{route.service} has not been used in project {project} before or it is "
                "disabled. Enable it, then retry.",
                "PERMISSION_DENIED",
                reason="SERVICE_DISABLED",
                metadata={"service": route.service, "consumer": f"projects/{project}"},
            )
