"""Fixtures for tests that go through the ``kinetic`` client, defined once for every tier.

``kinetic`` is imported inside the fixtures, never here: packages tested without the client
installed (kinetic-gke, kinetic-pathways) load this plugin too.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

__all__ = ["clean_kinetic_env", "kinetic_session"]


@pytest.fixture
def kinetic_session() -> Iterator[object]:
    """A fresh :mod:`kinetic.session` (backends, stores, upload memo) for this test."""
    from kinetic import session

    with session.fresh() as fresh:
        yield fresh


@pytest.fixture
def clean_kinetic_env(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kinetic_session: object
) -> Path:
    """No ``KINETIC_*`` or GCP project from outside, a fresh ``KINETIC_HOME`` and profiles
    file, and a fresh session. Returns the home directory."""
    for name in list(os.environ):
        if name.startswith("KINETIC_") or name == "GOOGLE_CLOUD_PROJECT":
            monkeypatch.delenv(name)
    home = tmp_path / "kinetic-home"
    monkeypatch.setenv("KINETIC_HOME", str(home))
    monkeypatch.setenv("KINETIC_PROFILES_FILE", str(tmp_path / "profiles.json"))
    return home
