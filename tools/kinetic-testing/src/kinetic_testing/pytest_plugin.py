"""Pytest fixtures shared by every test tier; loaded for the whole workspace via ``-p``.

Importing this module starts nothing: the fake GCS server starts the first time a test asks
for ``fake_gcs`` (or ``gcs_bucket``) and stops at the end of the session.
"""

import uuid
from collections.abc import Iterator

import pytest

from kinetic_testing.fake_gcs import FakeGcsServer

__all__ = ["fake_gcs", "gcs_bucket"]

_EMULATOR_ENV = "STORAGE_EMULATOR_HOST"


@pytest.fixture(scope="session")
def fake_gcs() -> Iterator[FakeGcsServer]:
    """A fake-gcs-server for the session, with ``STORAGE_EMULATOR_HOST`` pointing at it.

    The previous value of ``STORAGE_EMULATOR_HOST`` is restored when the session ends.
    """
    with FakeGcsServer() as server:
        patch = pytest.MonkeyPatch()
        patch.setenv(_EMULATOR_ENV, server.endpoint)
        try:
            yield server
        finally:
            patch.undo()


@pytest.fixture
def gcs_bucket(fake_gcs: FakeGcsServer) -> str:
    """A new, empty, uniquely named bucket on the fake server, as ``gs://NAME``."""
    name = f"kinetic-test-{uuid.uuid4().hex[:16]}"
    fake_gcs.create_bucket(name)
    return f"gs://{name}"
