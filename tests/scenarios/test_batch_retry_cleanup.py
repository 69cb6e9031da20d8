"""``results()`` with its default cleanup removes every attempt of a collected input: a
retried input's earlier, failed attempts used to stay in the store (and their resources on
the backend) for ever."""

from pathlib import Path

import batch_userfuncs as uf
from scenario_support import ScenarioBackend

import kinetic
from kinetic_protocol import layout


def test_results_cleans_up_the_earlier_attempts_of_a_retried_input(
    kinetic_backend: ScenarioBackend, tmp_path: Path
) -> None:
    step = kinetic_backend.decorate()(uf.step)
    batch = step.run_async_map(
        [{"value": "plain"}, {"value": "retried", "fail_first": str(tmp_path / "failed-once")}],
        retries=1,
    )
    assert batch.results(timeout=300) == ["plain", "retried"]

    store = kinetic_backend.store()
    attempts = [batch._manifest.child_job_id(1, 0), batch._manifest.child_job_id(1, 1)]
    left = {job_id: store.list(layout.job_prefix(job_id)) for job_id in attempts}
    assert left == {job_id: [] for job_id in attempts}
    assert kinetic.list_jobs(backend=kinetic_backend.name) == []
