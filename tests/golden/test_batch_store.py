"""A batch written in the store layout of an older Kinetic (``batch_store/v1``, see its README)
still attaches and works with today's: status, resume, results and cleanup."""

import shutil
from pathlib import Path

import pytest

import kinetic
from kinetic_protocol import JobStatus
from kinetic_runtime.stores.local import LocalStore

GOLDEN = Path(__file__).resolve().parent / "batch_store" / "v1"
GROUP_ID = "grp-75d383c0"


@pytest.fixture
def old_store(clean_kinetic_env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the golden store, and its keys in a fresh Kinetic home."""
    shutil.copytree(GOLDEN / "home" / "keys", clean_kinetic_env / "keys")
    store = tmp_path / "store"
    shutil.copytree(GOLDEN / "store", store)
    monkeypatch.setenv("KINETIC_STORE", f"file://{store}")
    return store


def test_a_batch_of_the_old_layout_attaches_resumes_and_cleans_up(old_store: Path) -> None:
    batch = kinetic.attach_batch(GROUP_ID, backend="local", poll_interval=0.05)
    assert [job.job_id if job else None for job in batch.jobs] == [
        "square-75d383c0-0",
        "square-75d383c0-1",
        None,
    ]
    assert batch.statuses() == [(0, JobStatus.SUCCEEDED), (1, JobStatus.SUCCEEDED)]
    assert batch.submission_status().state == "gone"

    said = batch.resume()
    assert "1 of 3 inputs to submit (1 never submitted" in said
    batch.wait_submitted(timeout=120)
    assert batch.results(timeout=120, cleanup=False) == [0, 1, 4]

    batch.cleanup()
    assert not LocalStore(old_store).list(f"groups/{GROUP_ID}/")
    assert GROUP_ID not in [summary.group_id for summary in kinetic.list_batches(backend="local")]
