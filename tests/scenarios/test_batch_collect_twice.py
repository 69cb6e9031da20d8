"""Collecting a batch's results twice: values are read once, and cleanup happens when asked."""

import batch_userfuncs as uf
from scenario_support import ScenarioBackend

from kinetic import JobStatus


def test_results_without_cleanup_then_with_it_cleans_every_child(
    kinetic_backend: ScenarioBackend,
) -> None:
    square = kinetic_backend.decorate()(uf.square)
    batch = square.run_async_map([1, 2, 3])
    assert batch.results(cleanup=False) == [1, 4, 9]
    kept = [job for job in batch.jobs if job is not None]
    assert [job.status() for job in kept] == [JobStatus.SUCCEEDED] * 3

    assert batch.results() == [1, 4, 9]  # the values read before; now each child is cleaned
    assert [job.status() for job in kept] == [JobStatus.NOT_FOUND] * 3
    store = kinetic_backend.store()
    assert [key for job in kept for key in store.list(f"jobs/{job.job_id}/")] == []
