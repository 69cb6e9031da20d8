"""An in-process fake of the Google Cloud APIs ``kinetic up``, ``kinetic doctor`` and the
pre-flight check use: GKE, Service Usage, Compute machine types, Resource Manager, IAM and
Artifact Registry, on one HTTP port, long-running operations included.

Point Kinetic at it with ``KINETIC_GCP_API_ENDPOINT=fake.url``; Cloud Storage is
fake-gcs-server's (``gcs_bucket``). Only the standard library is used.
"""

from __future__ import annotations

from typing import Self

from kinetic_testing.gcp_fake.apis import DEFAULT_MACHINE_TYPES, FakeApis
from kinetic_testing.gcp_fake.container import FakeContainer
from kinetic_testing.gcp_fake.server import ApiError, RoutedServer

__all__ = ["DEFAULT_MACHINE_TYPES", "ApiError", "FakeGoogleCloud"]


class FakeGoogleCloud(RoutedServer):
    """Every fake API on one server: ``fake.container`` (GKE) and ``fake.apis`` (the rest)."""

    def __init__(self, *, polls_until_done: int = 2) -> None:
        super().__init__()
        self.container = FakeContainer(self, polls_until_done)
        self.apis = FakeApis(self, polls_until_done)

    def __enter__(self) -> Self:
        super().__enter__()
        return self
