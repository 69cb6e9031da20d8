"""A full disk under the local backend's job directories (a real tmpfs, filled to its last
byte; the store stays on another disk): a fault of the machine, never the input's.

A submission that met it is left to ``resume`` (it was recorded as the input's own error for
ever).
"""

from collections.abc import Iterator
from pathlib import Path

import batch_userfuncs as uf
import pytest
from batch_support import join_batch_thread
from click.testing import CliRunner
from scenario_support import ScenarioBackend

import kinetic
from kinetic.batch import SkippedInputError
from kinetic.cli import cli
from kinetic_testing.full_disk import Tmpfs, tmpfs


@pytest.fixture
def jobs_disk(isolated_kinetic: Path) -> Iterator[Tmpfs]:
    """The local backend's job directories (and slots) on a small disk of their own."""
    with tmpfs(isolated_kinetic / "local") as disk:
        yield disk


def test_a_submission_that_met_a_full_disk_is_left_to_resume(
    local_backend: ScenarioBackend, jobs_disk: Tmpfs
) -> None:
    square = local_backend.decorate()(uf.square)
    with jobs_disk.full():
        batch = square.run_async_map([1, 2, 3], max_concurrent=1)
        join_batch_thread(batch.group_id)
    for outcome in batch.results(timeout=60, cleanup=False, return_exceptions=True):
        assert isinstance(outcome, SkippedInputError), outcome
        assert "stopped submitting on an error: DiskFullError" in str(outcome)
    resumed = CliRunner().invoke(cli, ["--backend", "local", "batch", "resume", batch.group_id])
    assert resumed.exit_code == 0, resumed.output
    assert kinetic.attach_batch(batch.group_id, backend="local").results(timeout=60) == [1, 4, 9]
