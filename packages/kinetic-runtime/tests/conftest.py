"""Fixtures of the runtime tests; helpers in ``runtime_jobs`` are imported by plain name."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from runtime_jobs import JobStage


@pytest.fixture
def jobs(tmp_path: Path) -> JobStage:
    """A ``file://`` store and work directory in ``tmp_path`` for jobs staged by hand."""
    return JobStage(tmp_path)
