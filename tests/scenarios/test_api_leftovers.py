"""The API reference's smaller promises, end to end on the local backend: ``list_jobs()`` newest
first, the FAQ's ``submit()``, and ``BatchHandle``'s public fields as dataclass fields."""

import dataclasses
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import batch_userfuncs as uf
import pytest
from scenario_support import ScenarioBackend, client_only

import kinetic
from kinetic.submission import record as record_module


class _Clock:
    """``datetime`` for job records, one second later at each submission (no sleeping)."""

    def __init__(self) -> None:
        self.times: Iterator[datetime] = (
            datetime(2026, 1, 1, tzinfo=UTC) + timedelta(seconds=i) for i in range(100)
        )

    def now(self, tz: object = None) -> datetime:
        return next(self.times)


@client_only
def test_list_jobs_returns_the_newest_jobs_first(
    kinetic_backend: ScenarioBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(record_module, "datetime", _Clock())
    # Submitted in their ids' order, so a listing in id order would show the oldest first.
    oldest = kinetic_backend.decorate()(uf.echo).run_async()
    middle = kinetic_backend.decorate()(uf.say).run_async("x")
    newest = kinetic_backend.decorate()(uf.square).run_async(3)
    listed = kinetic.list_jobs(backend=kinetic_backend.name)
    assert [job.job_id for job in listed] == [newest.job_id, middle.job_id, oldest.job_id]
    assert [job.created_at for job in listed] == sorted(
        (job.created_at for job in listed), reverse=True
    )
    for job in (oldest, middle, newest):
        job.result()


@client_only
def test_submit_is_run_async_by_the_faq_name(kinetic_backend: ScenarioBackend) -> None:
    square = kinetic_backend.decorate()(uf.square)
    job = square.submit(7)
    assert isinstance(job, kinetic.JobHandle)
    assert job.func_name == "square"
    assert job.result() == 49


@client_only
def test_a_batch_handle_shows_the_spec_fields_as_a_dataclass(
    kinetic_backend: ScenarioBackend,
) -> None:
    square = kinetic_backend.decorate()(uf.square)
    batch = square.run_async_map([1, 2], name="sweep", tags={"owner": "docs"})
    assert batch.results(cleanup=False) == [1, 4]
    assert dataclasses.is_dataclass(batch)
    assert [f.name for f in dataclasses.fields(batch)] == ["group_id", "name", "tags", "jobs"]
    as_dict = dataclasses.asdict(batch)
    assert as_dict["group_id"] == batch.group_id and as_dict["group_id"].startswith("grp-")
    assert (as_dict["name"], as_dict["tags"]) == ("sweep", {"owner": "docs"})
    assert [job["job_id"] for job in as_dict["jobs"]] == [
        job.job_id for job in batch.jobs if job is not None
    ]
    attached = kinetic.attach_batch(batch.group_id, backend=kinetic_backend.name)
    assert (attached.group_id, attached.name, attached.tags) == (
        batch.group_id,
        "sweep",
        {"owner": "docs"},
    )
    assert attached.jobs == batch.jobs
    with pytest.raises(AttributeError):
        batch.jobs = []  # type: ignore[misc]  # a view of what was submitted, not settable
    batch.cleanup()
