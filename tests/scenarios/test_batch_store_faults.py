"""A store that fails while a batch is submitted (the disk fills up): the submitter stops
cleanly instead of crashing its thread, nothing half-written is visible, and both this handle
and a reattached one say why the remaining inputs never ran. A store that fails while a batch
is collected keeps every child whose outcome it could not keep (local backend)."""

import logging
from collections.abc import Callable
from pathlib import Path

import batch_userfuncs as uf
import pytest
from batch_support import join_batch_thread
from click.testing import CliRunner
from scenario_support import ScenarioBackend

import kinetic
from kinetic import JobStatus
from kinetic.batch import SkippedInputError
from kinetic.cli import cli
from kinetic_testing.full_disk import full_disk


def _full_after_three_children() -> Callable[[str], bool]:
    """A disk that fills once three child records are written (writes elsewhere go on)."""
    written: list[str] = []

    def children_full(directory: str) -> bool:
        if not directory.endswith("/children"):
            return False
        written.append(directory)
        return len(written) > 3

    return children_full


def test_a_full_disk_stops_the_batch_and_every_reader_is_told(
    local_backend: ScenarioBackend,
    isolated_kinetic: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    root = isolated_kinetic / "store"
    square = local_backend.decorate()(uf.square)
    with (
        caplog.at_level(logging.ERROR, logger="kinetic"),
        full_disk(root, _full_after_three_children()),
    ):
        batch = square.run_async_map(list(range(6)), max_concurrent=1)
        join_batch_thread(batch.group_id)
    assert any("No space left on device" in r.getMessage() for r in caplog.records), caplog.text

    group_id = batch.group_id
    for handle in (batch, kinetic.attach_batch(group_id, backend="local")):
        outcomes = handle.results(timeout=60, cleanup=False, return_exceptions=True)
        assert outcomes[:3] == [0, 1, 4]
        for skipped in outcomes[3:]:
            assert isinstance(skipped, SkippedInputError), outcomes
            assert "stopped submitting on an error" in str(skipped)
            assert "disk is full" in str(skipped)
    store = local_backend.store()
    assert [key.rsplit("/", 1)[1] for key in store.list(f"groups/{group_id}/children/")] == [
        "000000-000.json",
        "000001-000.json",
        "000002-000.json",
    ]
    leftovers = [path for path in root.rglob("*") if path.name.startswith(".kinetic-tmp-")]
    assert leftovers == [], "a half-written object was left behind"


def test_children_stay_when_their_outcomes_cannot_be_kept_with_the_batch(
    local_backend: ScenarioBackend,
    isolated_kinetic: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """``results()`` deletes a child only once its outcome is kept with the batch: if that
    write fails, the child is the only copy left, so it must stay for a later collection."""
    square = local_backend.decorate()(uf.square)
    batch = square.run_async_map([1, 2, 3])

    def collected_full(directory: str) -> bool:
        return directory.endswith("/collected")

    with (
        caplog.at_level(logging.WARNING, logger="kinetic"),
        full_disk(isolated_kinetic / "store", collected_full) as disk,
    ):
        assert batch.results(timeout=60) == [1, 4, 9]  # cleanup=True, the default
    assert disk.refused, "the kept outcomes were never written"
    warnings = [r for r in caplog.records if "could not keep collected" in r.getMessage()]
    assert warnings, caplog.text
    for record in warnings:  # one line that says why, no traceback squeezed into it
        assert record.exc_info is None and "\n" not in record.getMessage(), record.getMessage()
        assert 'error="StoreError: Could not write' in record.getMessage()
        assert "No space left on device" in record.getMessage()
    assert "Traceback" not in caplog.text

    children = [job for job in batch.jobs if job is not None]
    assert [job.status() for job in children] == [JobStatus.SUCCEEDED] * 3
    later = kinetic.attach_batch(batch.group_id, backend="local")
    assert later.results(timeout=60) == [1, 4, 9]


def test_a_batch_stopped_by_a_full_disk_is_finished_by_resume_once_space_is_back(
    local_backend: ScenarioBackend, isolated_kinetic: Path
) -> None:
    """A transient fault leaves every input runnable: ``resume`` used to answer "finished
    submitting; nothing to resume" because the stopped submitter had recorded its end."""
    square = local_backend.decorate()(uf.square)
    with full_disk(isolated_kinetic / "store", _full_after_three_children()):
        batch = square.run_async_map(list(range(6)), max_concurrent=1)
        join_batch_thread(batch.group_id)
    assert batch.submission_status().completion is not None
    result = CliRunner().invoke(cli, ["--backend", "local", "batch", "resume", batch.group_id])
    assert result.exit_code == 0, result.output
    assert "Resumed batch" in result.output
    later = kinetic.attach_batch(batch.group_id, backend="local")
    assert later.results(timeout=60) == [0, 1, 4, 9, 16, 25]
