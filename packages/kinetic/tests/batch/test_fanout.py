"""``run_async_map`` argument checks, the unbounded-batch warning, and what a fan-out submits.

Argument errors must come before anything is resolved or stored (``nothing_resolved``).
The other tests run the real submission path against a fake backend and a real local store.
"""

import gc
import logging
import re
import threading
from collections.abc import Sequence
from concurrent.futures import Future
from pathlib import Path
from typing import Any, ClassVar

import pytest

import kinetic
from kinetic import BatchError
from kinetic.batch import fanout
from kinetic.batch.fanout import new_group_id
from kinetic.decorator import RemoteFunction
from kinetic.trust import open_manifest
from kinetic_protocol import ConfigError, FailureCause, JobRecord, JobState, JobStatus, layout
from kinetic_runtime.stores.local import LocalStore

DNS_1123_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
Remote = RemoteFunction[[Any], Any]
FakeBackend = Any  # conftest.FakeBackend; test modules cannot import conftest by name


# The errors rule (docs/architecture.md): a wrong type is a TypeError, a wrong value of the
# right type a ConfigError, which is the ValueError the spec promises for max_concurrent=0.
@pytest.mark.parametrize(
    ("value", "error"),
    [(0, ConfigError), (-1, ConfigError), (-64, ConfigError)]
    + [(bad, TypeError) for bad in (True, False, 1.5, 2.0, "4", [4])],
    ids=repr,
)
def test_max_concurrent_must_be_a_positive_int_or_none(
    remote: Remote, nothing_resolved: None, value: Any, error: type[Exception]
) -> None:
    with pytest.raises(error, match="max_concurrent") as info:
        remote.run_async_map([1], max_concurrent=value)
    assert repr(value) in str(info.value)


def test_a_non_positive_max_concurrent_is_a_value_error_as_the_spec_says(
    remote: Remote, nothing_resolved: None
) -> None:
    with pytest.raises(ValueError, match="max_concurrent"):
        remote.run_async_map([1], max_concurrent=0)


@pytest.mark.parametrize(
    ("value", "error"),
    [(-1, ConfigError)] + [(bad, TypeError) for bad in (True, 1.0, "1", None)],
    ids=repr,
)
def test_retries_must_be_a_non_negative_int(
    remote: Remote, nothing_resolved: None, value: Any, error: type[Exception]
) -> None:
    with pytest.raises(error, match="retries") as info:
        remote.run_async_map([1], retries=value)
    assert repr(value) in str(info.value)


@pytest.mark.parametrize(
    ("value", "error", "named"),
    [
        (["preemptd"], ConfigError, "'preemptd'"),
        (["oom", "cancelled"], ConfigError, "'cancelled'"),
        ([3], ConfigError, "3"),
        ("oom", TypeError, "str 'oom'"),
        (5, TypeError, "int 5"),
    ],
    ids=repr,
)
def test_retry_on_must_name_causes_retries_can_apply_to(
    remote: Remote, nothing_resolved: None, value: Any, error: type[Exception], named: str
) -> None:
    """Refused before anything is resolved or stored, naming the bad value and the valid ones."""
    with pytest.raises(error, match="retry_on") as info:
        remote.run_async_map([1], retries=1, retry_on=value)
    message = str(info.value)
    assert named in message
    assert "exit, image, infrastructure, oom, preempted, timeout, unschedulable, user" in message


def test_retry_on_is_stored_with_the_batch(remote: Remote, fake_backend: FakeBackend) -> None:
    batch = remote.run_async_map([1], retries=1, retry_on=[kinetic.FailureCause.OOM, "exit"])
    assert batch.results(timeout=30) == [1]
    assert batch._manifest.retry_on == ["exit", "oom"]


@pytest.mark.parametrize("cause", [FailureCause.UNSCHEDULABLE, FailureCause.IMAGE])
def test_retries_leave_an_unschedulable_or_image_failure_alone_unless_retry_on_names_it(
    remote: Remote, fake_backend: FakeBackend, monkeypatch: pytest.MonkeyPatch, cause: FailureCause
) -> None:
    """On the per-child path (local, and gke without arrays) the client decides each retry:
    the same attempt again would meet the same missing capacity or image."""

    def statuses(records: Sequence[JobRecord]) -> dict[str, JobState]:
        failed = JobState(status=JobStatus.FAILED, cause=cause, detail="never started")
        return {record.job_id: failed for record in records}

    def never_runs(record: JobRecord, **kwargs: Any) -> None:
        fake_backend.submitted.append(record)

    monkeypatch.setattr(fake_backend, "submit", never_runs)
    monkeypatch.setattr(fake_backend, "statuses", statuses)
    batch = remote.run_async_map([1], retries=2)
    with pytest.raises(BatchError):
        batch.results(timeout=30, cleanup=False)
    assert [record.attempt for record in fake_backend.submitted] == [0]
    assert batch.cause_counts() == {cause.value: 1}

    fake_backend.submitted.clear()
    named = remote.run_async_map([1], retries=2, retry_on=[cause])
    with pytest.raises(BatchError):
        named.results(timeout=30, cleanup=False)
    assert [record.attempt for record in fake_backend.submitted] == [0, 1, 2]


@pytest.mark.parametrize(
    "tags", [{"team": 1}, {1: "team"}, {"team": None}, ["team"], "team=ml"], ids=repr
)
def test_tags_must_map_str_to_str(remote: Remote, nothing_resolved: None, tags: Any) -> None:
    with pytest.raises(TypeError, match="tags"):
        remote.run_async_map([1], tags=tags)


def test_name_must_be_a_str(remote: Remote, nothing_resolved: None) -> None:
    with pytest.raises(TypeError, match="name"):
        remote.run_async_map([1], name=7)  # type: ignore[arg-type]


def test_input_mode_mismatch_is_rejected_before_resolving(
    remote: Remote, nothing_resolved: None
) -> None:
    with pytest.raises(TypeError, match=r"input 1\b"):
        remote.run_async_map([[1], 2], input_mode="args")
    with pytest.raises(ConfigError, match="input_mode"):
        remote.run_async_map([1], input_mode="star")


@pytest.mark.parametrize(
    ("max_concurrent", "retries", "tags"),
    [(None, 0, None), (1, 0, {}), (64, 3, {"team": "ml"})],
)
def test_valid_limits_are_accepted(
    remote: Remote,
    fake_backend: FakeBackend,
    max_concurrent: int | None,
    retries: int,
    tags: dict[str, str] | None,
) -> None:
    batch = remote.run_async_map([1, 2], max_concurrent=max_concurrent, retries=retries, tags=tags)
    assert batch.results(timeout=30) == [1, 2]
    assert batch.tags == (tags or {})


class RecordingSubmitter:
    """Stands in for the submitter: records how ``run_async_map`` started it, submits nothing."""

    started: ClassVar[list[str]] = []

    def __init__(self, **options: Any) -> None:
        self.max_concurrent = options["manifest"].max_concurrent

    def run(self, *, watch: bool = True) -> None:
        self.started.append("in the calling thread" if not watch else "run(watch=True)")

    def start_background(self) -> None:
        self.started.append("in a background thread")


@pytest.fixture
def recording_submitter(fake_backend: FakeBackend, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    RecordingSubmitter.started = []
    monkeypatch.setattr(fanout, "Submitter", RecordingSubmitter)
    return RecordingSubmitter.started


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]


def test_more_than_100_unbounded_inputs_log_a_warning(
    remote: Remote, recording_submitter: list[str], caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="kinetic"):
        remote.run_async_map(range(101), max_concurrent=None)
    [message] = _warnings(caplog)
    # One plain sentence, not a structured event rendered as ``event='...'``.
    assert message.startswith("Submitting 101 jobs with max_concurrent=None")


@pytest.mark.parametrize(("count", "limit"), [(100, None), (101, 64), (101, 101), (5000, 1)])
def test_no_warning_at_100_inputs_or_with_a_limit(
    remote: Remote,
    recording_submitter: list[str],
    caplog: pytest.LogCaptureFixture,
    count: int,
    limit: int | None,
) -> None:
    with caplog.at_level(logging.WARNING, logger="kinetic"):
        remote.run_async_map(range(count), max_concurrent=limit)
    assert _warnings(caplog) == []


@pytest.mark.parametrize(
    ("limit", "retries", "expected"),
    [
        (None, 0, "in the calling thread"),
        (None, 1, "in a background thread"),
        (64, 0, "in a background thread"),
        (1, 3, "in a background thread"),
    ],
)
def test_only_unbounded_batches_without_retries_submit_synchronously(
    remote: Remote, recording_submitter: list[str], limit: int | None, retries: int, expected: str
) -> None:
    remote.run_async_map([1, 2], max_concurrent=limit, retries=retries)
    assert recording_submitter == [expected]


def test_inputs_may_be_any_iterable(remote: Remote, fake_backend: FakeBackend) -> None:
    batch = remote.run_async_map((x * 2 for x in range(3)), max_concurrent=None)
    assert batch.results() == [0, 2, 4]


def test_each_child_is_submitted_with_its_batch_identity(
    remote: Remote, fake_backend: FakeBackend, store: LocalStore
) -> None:
    batch = remote.run_async_map(["a", "b", "c"], max_concurrent=None, name="n", tags={"k": "v"})
    assert re.fullmatch(r"grp-[0-9a-f]{8}", batch.group_id)
    records = sorted(fake_backend.submitted, key=lambda record: record.group_index or 0)
    assert [(r.group_id, r.group_kind, r.group_index, r.attempt) for r in records] == [
        (batch.group_id, "map", index, 0) for index in range(3)
    ]
    assert [job.job_id for job in batch.jobs if job] == [record.job_id for record in records]
    manifest = open_manifest(
        store.read(layout.manifest_key(batch.group_id)), group_id=batch.group_id, key="manifest"
    )
    assert (manifest.total_expected, manifest.name, manifest.tags) == (3, "n", {"k": "v"})


def test_group_ids_are_fresh_8_hex_digits() -> None:
    ids = {new_group_id() for _ in range(200)}
    assert len(ids) == 200
    assert all(re.fullmatch(r"grp-[0-9a-f]{8}", group_id) for group_id in ids)


@pytest.mark.parametrize("length", [1, 40, 63, 64, 200])
def test_children_of_a_long_named_function_have_ids_within_63_characters(
    fake_backend: FakeBackend, store: LocalStore, tmp_path: Path, length: int
) -> None:
    namespace: dict[str, Any] = {}
    name = ("Train_Model_" * 20)[:length].rstrip("_") or "f"
    exec(f"def {name}(x):\n    return x\n", namespace)  # a real def with that __name__
    remote = kinetic.run(accelerator="cpu", backend="local")(namespace[name])
    batch = remote.run_async_map([1, 2], max_concurrent=None)
    manifest = open_manifest(
        store.read(layout.manifest_key(batch.group_id)), group_id=batch.group_id, key="manifest"
    )
    # The prefix leaves room for the largest index and retry suffix it allows.
    for job_id in (
        *(record.job_id for record in fake_backend.submitted),
        manifest.child_job_id(999_999, 0),
        manifest.child_job_id(999_999, 99),
    ):
        assert len(job_id) <= 63, job_id
        assert DNS_1123_LABEL.fullmatch(job_id), job_id
    assert batch.group_id.removeprefix("grp-") in manifest.job_id_prefix


def test_a_batch_larger_than_one_array_object_is_split_unless_it_fails_fast() -> None:
    """A backend's array object holds ``array_batches`` inputs; more are several objects, but
    one object's failure cannot stop another's inputs, so fail-fast takes one job per input."""
    from kinetic.backends import array_backend
    from kinetic_protocol import Capabilities

    class Arrays:
        capabilities = Capabilities(array_batches=3)

    class NoArrays:
        capabilities = Capabilities()

    arrays: Any = Arrays()
    cancels = {"fail_fast": True, "cancel_running_on_fail": True}
    no_fail_fast = {"fail_fast": False, "cancel_running_on_fail": False}
    assert array_backend(arrays, 3, **cancels) is arrays
    assert array_backend(arrays, 7, **no_fail_fast) is arrays
    assert array_backend(arrays, 7, **cancels) is None
    assert array_backend(arrays, 0, **no_fail_fast) is None
    assert array_backend(NoArrays(), 1, **no_fail_fast) is None  # type: ignore[arg-type]
    # Fail-fast that lets running children finish: never an array object, even of one.
    assert array_backend(arrays, 1, fail_fast=True, cancel_running_on_fail=False) is None


def test_a_large_unbounded_batch_hands_its_submission_threads_a_few_inputs_at_a_time(
    remote: Remote, fake_backend: FakeBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The inputs not yet being submitted wait as plain indexes, not as a future each (about
    1 KB apiece: a third of the client's memory at 100,000 inputs)."""
    release, entered = threading.Event(), threading.Semaphore(0)
    submit = fake_backend.submit

    def held(record: JobRecord, **kwargs: Any) -> None:
        entered.release()
        release.wait()
        submit(record, **kwargs)

    monkeypatch.setattr(fake_backend, "submit", held)
    submitting = threading.Thread(
        target=remote.run_async_map, args=(range(200),), kwargs={"max_concurrent": None}
    )
    submitting.start()
    try:
        for _ in range(16):  # every submission thread holds an input
            assert entered.acquire(timeout=60)
        unfinished = [o for o in gc.get_objects() if isinstance(o, Future) and not o.done()]
    finally:
        release.set()
        submitting.join()
    assert 16 <= len(unfinished) <= 32
    assert len(fake_backend.submitted) == 200
