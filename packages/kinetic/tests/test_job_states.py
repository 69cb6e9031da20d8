"""``kinetic.jobs.job_states``: the state of many jobs from one backend call."""

import pytest

import kinetic
from kinetic.jobs import job_states
from kinetic.local import LocalBackend
from kinetic_protocol import JobStatus


@pytest.mark.usefixtures("clean_kinetic_env")
def test_states_of_several_jobs_come_from_one_backend_call(monkeypatch: pytest.MonkeyPatch) -> None:

    def double(x: int) -> int:  # a closure travels by value, whatever this module is named
        return 2 * x

    remote = kinetic.run(accelerator="cpu", backend="local")(double)
    jobs = [remote.run_async(i) for i in range(3)]
    for job in jobs:
        assert job.wait().status is JobStatus.SUCCEEDED, job.tail(20)
    calls: list[int] = []
    real = LocalBackend.statuses
    monkeypatch.setattr(
        LocalBackend,
        "statuses",
        lambda self, records: calls.append(len(records)) or real(self, records),
    )
    states = job_states(jobs)
    assert calls == [3]
    assert {job_id: state.status for job_id, state in states.items()} == {
        job.job_id: JobStatus.SUCCEEDED for job in jobs
    }
    for job in jobs:
        job.cleanup()
