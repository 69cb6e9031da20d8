"""The ``write`` fixture: a project's files, made from a mapping of relative path to text."""

from collections.abc import Callable
from pathlib import Path

import pytest


def _write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


@pytest.fixture
def write() -> Callable[[Path, dict[str, str]], Path]:
    """Create files (relative path -> text) under a root directory; returns the root."""
    return _write
