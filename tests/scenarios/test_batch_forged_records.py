"""A store writer's forged batch bookkeeping is left out with a warning naming its key
(local backend, real processes, a real ``file://`` store): it makes ``resume`` run no finished
input again and skip no input, and holds nothing off.

The batch's submitter died after input 1's record and before its job (inputs 0 done, 1
recorded but never created, 2 and 3 never submitted). Then, before ``resume``:

- a child record for input 0's attempt 1 (within ``retries``): read as recorded but never
  created, ``resume`` ran input 0 again;
- a submission error for input 2: ``resume`` skipped it for ever;
- a completion record: ``resume`` said "finished submitting; nothing to resume";
- a cancel request: ``resume`` said "was cancelled; nothing to resume";
- a lease of the next epoch with a fresh heartbeat: ``resume`` was refused, as if a submitter
  lived;
- a cancelled-attempt record for input 1 (the timeline showed it cancelled).
"""

import logging
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import msgspec
import pytest
from batch_support import died_submitting, dies_after_recording
from scenario_support import ScenarioBackend, wait_until

import kinetic
from kinetic_protocol import (
    BatchCancel,
    BatchChild,
    BatchChildCancelled,
    BatchCompletion,
    BatchSubmissionError,
    IntegrityError,
    Keyring,
    ObjectStore,
    SubmitterLease,
    layout,
)
from kinetic_protocol.signing import seal_json

KINDS = ["child", "submission error", "completion", "cancel", "lease", "cancelled attempt"]


def _forgeries(group_id: str) -> dict[str, tuple[str, msgspec.Struct]]:
    """Each kind of bookkeeping record as a store writer would leave it: its key and record."""
    now = datetime.now(UTC).isoformat()
    return {
        "child": (
            layout.child_key(group_id, 0, 1),
            BatchChild(group_id=group_id, index=0, attempt=1, job_id="forged", submitted_at=now),
        ),
        "submission error": (
            layout.submission_error_key(group_id, 2),
            BatchSubmissionError(
                group_id=group_id,
                index=2,
                exc_type="ValueError",
                message="forged",
                failed_at=now,
            ),
        ),
        "completion": (
            layout.completion_key(group_id),
            BatchCompletion(group_id=group_id, submitted=4, finished_at=now),
        ),
        "cancel": (layout.cancel_key(group_id), BatchCancel(group_id=group_id, requested_at=now)),
        "lease": (
            layout.lease_key(group_id, 1),
            SubmitterLease(
                group_id=group_id,
                epoch=1,
                owner="forger",
                host="elsewhere",
                pid=1,
                started_at=now,
                heartbeat_at=now,
                lease_seconds=3600.0,
            ),
        ),
        "cancelled attempt": (
            layout.cancelled_child_key(group_id, 1, 0),
            BatchChildCancelled(
                group_id=group_id, index=1, attempt=0, cancelled_at=now, reason="forged"
            ),
        ),
    }


def _moved(store: ObjectStore, group_id: str) -> dict[str, bytes]:
    """Records the batch itself signed, each copied to another key."""
    child = store.read(layout.child_key(group_id, 1, 0))
    lease = store.read(layout.lease_key(group_id, 0))
    return {layout.child_key(group_id, 0, 1): child, layout.lease_key(group_id, 1): lease}


@pytest.fixture
def quick_leases(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KINETIC_BATCH_HEARTBEAT", "0.1")
    monkeypatch.setenv("KINETIC_BATCH_LEASE", "1")


def _gone(group_id: str) -> bool:
    return kinetic.attach_batch(group_id, backend="local").submission_status().gone


def _resume_and_check(
    group_id: str,
    runs: Path,
    store: ObjectStore,
    forged: dict[str, bytes],
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Write ``forged``, resume, collect: every input ran once, and each forged key is named
    in a warning."""
    for key, data in forged.items():
        store.write(key, data)
    with caplog.at_level(logging.WARNING, logger="kinetic"):
        attached = kinetic.attach_batch(group_id, backend="local")
        assert attached.submission_status().gone, "a forged lease holds nobody off"
        said = attached.resume()
        assert "3 of 4 inputs to submit" in said, said
        assert attached.results(timeout=60, cleanup=False) == [0, 1, 4, 9]
        timeline = attached.timeline()
    for index in range(4):
        ran = (runs / str(index)).read_text().split()
        assert len(ran) == 1, f"input {index} ran {len(ran)} times: {ran}"
    assert [(a.index, a.attempt, a.outcome.name) for a in timeline.attempts] == [
        (index, 0, "SUCCEEDED") for index in range(4)
    ], "the timeline shows a forged attempt"
    warnings = "\n".join(r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING)
    for key in forged:
        assert f"Ignoring {store.uri}/{key} in batch {group_id}" in warnings, (key, warnings)


@pytest.mark.parametrize("kind", KINDS)
def test_an_unsigned_record_neither_reruns_nor_skips_an_input(
    local_backend: ScenarioBackend,
    tmp_path: Path,
    quick_leases: None,
    caplog: pytest.LogCaptureFixture,
    kind: str,
) -> None:
    group_id, runs = died_submitting(tmp_path, dies_after_recording(retries=1))
    wait_until(lambda: _gone(group_id), "the dead submitter's lease to run out")
    key, record = _forgeries(group_id)[kind]
    store = local_backend.store()
    _resume_and_check(group_id, runs, store, {key: msgspec.json.encode(record)}, caplog)


@pytest.mark.parametrize("how", ["signed with another key", "moved"])
def test_records_signed_elsewhere_or_moved_are_left_out(
    local_backend: ScenarioBackend,
    tmp_path: Path,
    quick_leases: None,
    caplog: pytest.LogCaptureFixture,
    how: str,
) -> None:
    group_id, runs = died_submitting(tmp_path, dies_after_recording(retries=1))
    wait_until(lambda: _gone(group_id), "the dead submitter's lease to run out")
    store = local_backend.store()
    if how == "moved":
        forged = _moved(store, group_id)
    else:
        forger = Keyring.generate(source="a forger")
        forged = {
            key: seal_json(forger, "batch-record", key, record)
            for key, record in _forgeries(group_id).values()
        }
    _resume_and_check(group_id, runs, store, forged, caplog)


def test_a_batch_from_before_signed_records_is_refused_and_still_cleaned_up(
    local_backend: ScenarioBackend,
) -> None:
    """Its manifest verifies but its bookkeeping cannot: read unverified, its records could
    re-run or skip inputs, and left out, every input would look unsubmitted. It is refused,
    naming the cleanup that still works."""
    from click.testing import CliRunner
    from scenario_funcs import add

    from kinetic.cli import cli
    from kinetic_testing.signed import keyring_of

    batch = kinetic.run(accelerator="cpu", backend="local")(add).run_async_map(
        [1, 2], max_concurrent=None
    )
    batch.wait(timeout=60)
    store = local_backend.store()
    manifest = msgspec.structs.replace(batch._manifest, signed_records=False)
    sealed = seal_json(keyring_of(manifest.job_template), "batch", batch.group_id, manifest)
    store.write(layout.manifest_key(batch.group_id), sealed)

    with pytest.raises(IntegrityError, match=f"kinetic batch cleanup {batch.group_id}"):
        kinetic.attach_batch(batch.group_id, backend="local")
    cleaned = CliRunner().invoke(cli, ["batch", "cleanup", batch.group_id, "--backend", "local"])
    assert cleaned.exit_code == 0, cleaned.output
    assert not store.exists(layout.manifest_key(batch.group_id))
    for child in batch.jobs:
        assert child is not None and store.list(layout.job_prefix(child.job_id)) == []


def _copy_of_another_record(store: ObjectStore, group_id: str) -> tuple[str, bytes]:
    """Input 0's signed record, planted at the key of input 2 (never submitted)."""
    return layout.child_key(group_id, 2, 0), store.read(layout.child_key(group_id, 0, 0))


def _true_record_changed(store: ObjectStore, group_id: str) -> tuple[str, bytes]:
    """Input 0's own record (it succeeded), its job id changed."""
    key = layout.child_key(group_id, 0, 0)
    return key, store.read(key).replace(b'"job_id":"', b'"job_id":"x')


@pytest.mark.parametrize(
    "plant", [_copy_of_another_record, _true_record_changed], ids=["copied", "changed"]
)
def test_a_record_that_does_not_verify_hides_no_input_for_good(
    local_backend: ScenarioBackend,
    tmp_path: Path,
    quick_leases: None,
    caplog: pytest.LogCaptureFixture,
    plant: Callable[[ObjectStore, str], tuple[str, bytes]],
) -> None:
    """An object that does not verify at an input's create-only key hid it for ever: its real
    record could never be written there, and it read "never submitted" though it ran (copied)
    or had already succeeded (changed)."""
    group_id, runs = died_submitting(tmp_path, dies_after_recording(retries=1))
    wait_until(lambda: _gone(group_id), "the dead submitter's lease to run out")
    store = local_backend.store()
    key, planted = plant(store, group_id)
    store.write(key, planted)
    with caplog.at_level(logging.WARNING, logger="kinetic"):
        before = kinetic.attach_batch(group_id, backend="local")
        if plant is _copy_of_another_record:
            [outcome] = before.results(timeout=60, cleanup=False, return_exceptions=True)[2:3]
            assert f"{store.uri}/{key} holds an object that does not" in str(outcome), outcome
        said = before.resume()
        assert "3 of 4 inputs to submit" in said, said
        assert before.results(timeout=60, cleanup=False) == [0, 1, 4, 9]
        later = kinetic.attach_batch(group_id, backend="local")
        assert later.results(timeout=60, cleanup=False) == [0, 1, 4, 9]
    for index in range(4):
        ran = (runs / str(index)).read_text().split()
        assert len(ran) == 1, f"input {index} ran {len(ran)} times: {ran}"
    assert f"Ignoring {store.uri}/{key} in batch {group_id}" in caplog.text
    if plant is _copy_of_another_record:
        assert f"Recorded attempt 0 of input 2 of batch {group_id}" in caplog.text


@pytest.mark.parametrize("lost", ["changed", "deleted"])
def test_an_input_whose_record_and_traces_are_gone_is_run_once_by_resume(
    local_backend: ScenarioBackend, tmp_path: Path, lost: str
) -> None:
    """A finished batch whose input 1 lost its record (changed, or deleted) and its job: the
    input reads why, truly, and ``resume`` runs it once (the batch had submitted every input)."""
    from durability_userfuncs import traced

    runs = tmp_path / "runs"
    runs.mkdir()
    batch = local_backend.decorate()(traced).run_async_map(
        [{"index": i, "runs": str(runs)} for i in range(3)]
    )
    assert batch.results(timeout=60, cleanup=False) == [0, 1, 4]
    store = local_backend.store()
    key = layout.child_key(batch.group_id, 1, 0)
    if lost == "changed":
        store.write(key, store.read(key).replace(b'"job_id":"', b'"job_id":"x'))
    else:
        store.delete(key)
    for index_part in store.list(layout.index_prefix(batch.group_id)):
        store.delete(index_part)  # the finished batch's index names its attempt too
    child = batch.jobs[1]
    assert child is not None
    child.cleanup()  # its backend resource and stored result: nothing shows it ran

    attached = kinetic.attach_batch(batch.group_id, backend="local")
    outcome = attached.results(timeout=60, cleanup=False, return_exceptions=True)[1]
    assert isinstance(outcome, kinetic.batch.SkippedInputError), outcome
    assert "never submitted" not in str(outcome) and "fail_fast" not in str(outcome)
    if lost == "changed":
        assert f"{store.uri}/{key} holds an object that does not" in str(outcome)
    else:
        assert "its record was deleted" in str(outcome)
    assert "Resumed batch" in attached.resume()
    assert attached.results(timeout=60, cleanup=False) == [0, 1, 4]
    assert [len((runs / str(i)).read_text().split()) for i in range(3)] == [1, 2, 1]
    assert (
        kinetic.attach_batch(batch.group_id, backend="local")
        .resume()
        .endswith("nothing to resume.")
    )
