"""Tests that act as another user than the one running them (root, in CI)."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

__all__ = ["shared_dir"]


@pytest.fixture
def shared_dir() -> Iterator[Path]:
    """An empty directory every user may enter and write (pytest's ``tmp_path`` is private to
    the user running the tests), for a test that drops to an unprivileged user."""
    path = Path(tempfile.mkdtemp(prefix="kinetic-shared-"))
    path.chmod(0o777)
    yield path
    shutil.rmtree(path, ignore_errors=True)
