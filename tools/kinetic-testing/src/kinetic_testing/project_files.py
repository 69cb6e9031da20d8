"""The ``write`` fixture: a project's files, made from a mapping of relative path to text.

Defined once here for the client's, the protocol's and the GKE package's tests (requirements
discovery, image contexts, isolated environments), which cannot import one another.
"""

from collections.abc import Callable
from pathlib import Path

import pytest

__all__ = ["write", "write_files"]


def write_files(root: Path, files: dict[str, str]) -> Path:
    """Create ``files`` (relative path -> text) under ``root``; returns ``root``."""
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


@pytest.fixture
def write() -> Callable[[Path, dict[str, str]], Path]:
    """Create files (relative path -> text) under a root directory; returns the root."""
    return write_files
