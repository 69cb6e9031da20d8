"""Someone who can write the store but holds no signing key cannot make a client or a job
unpickle bytes of their choosing (docs/security.md).

Each attack is the strongest a store writer has: the stored object is replaced while its
genuine signature is kept (or copied from another job), never merely garbled. The evidence
that nothing was unpickled is a marker directory the attacker's pickle would create.
"""

import hashlib
from pathlib import Path

import msgspec
import pytest
import scenario_funcs as uf
from click.testing import CliRunner
from scenario_support import ScenarioBackend

import kinetic
from kinetic import JobHandle, JobStatus
from kinetic._context import backend_for
from kinetic_protocol import CollectedOutcomes, Failed, IntegrityError, Succeeded, layout
from kinetic_protocol.records import encode_result
from kinetic_testing.telltale import tell_tale_pickle

pytestmark = pytest.mark.backends("local", "gke")


def _swap_body(sealed: bytes, body: bytes) -> bytes:
    """A signed blob with its body replaced and the genuine signature kept."""
    fields = msgspec.msgpack.decode(sealed)
    return msgspec.msgpack.encode({**fields, "body": body})


def _finished(job: JobHandle) -> JobStatus:
    return job.wait(timeout=120).status


@pytest.fixture
def marker(tmp_path: Path) -> Path:
    return tmp_path / "attacker-ran"


def test_a_replaced_result_is_refused_by_result_and_the_cli(
    kinetic_backend: ScenarioBackend, marker: Path
) -> None:
    add = kinetic_backend.decorate()(uf.add)
    job, untouched = add.run_async(1, 2), add.run_async(3, 4)
    assert _finished(job) is JobStatus.SUCCEEDED
    store, key = kinetic_backend.store(), layout.result_key(job.job_id)
    forged = encode_result(Succeeded(job_id=job.job_id, value=tell_tale_pickle(marker)))
    store.write(key, _swap_body(store.read(key), forged))

    with pytest.raises(IntegrityError) as caught:
        job.result()
    assert (caught.value.job_id, caught.value.key) == (job.job_id, key)
    assert "does not match its signature" in str(caught.value)

    from kinetic.cli import cli

    shown = CliRunner().invoke(
        cli, ["--backend", kinetic_backend.name, "jobs", "result", job.job_id], prog_name="kinetic"
    )
    assert shown.exit_code == 1, shown.output
    assert "does not match its signature" in shown.output
    assert not marker.exists(), "a forged result was unpickled"
    assert untouched.result(timeout=120) == 7


def test_a_replaced_stored_exception_is_refused(
    kinetic_backend: ScenarioBackend, marker: Path
) -> None:
    job = kinetic_backend.decorate()(uf.fail_with).run_async("genuine", 3)
    assert _finished(job) is JobStatus.FAILED
    store, key = kinetic_backend.store(), layout.result_key(job.job_id)
    genuine = msgspec.msgpack.decode(store.read(key))
    failed = msgspec.msgpack.decode(genuine["body"], type=Failed)
    forged = encode_result(msgspec.structs.replace(failed, exception=tell_tale_pickle(marker)))
    store.write(key, _swap_body(store.read(key), forged))
    with pytest.raises(IntegrityError, match=job.job_id):
        job.result()
    assert not marker.exists(), "a forged exception was unpickled"


def test_a_result_copied_from_another_job_is_refused(
    kinetic_backend: ScenarioBackend,
) -> None:
    add = kinetic_backend.decorate()(uf.add)
    first, second = add.run_async(1), add.run_async(2)
    assert _finished(first) is _finished(second) is JobStatus.SUCCEEDED
    store = kinetic_backend.store()
    copied = store.read(layout.result_key(first.job_id))
    store.write(layout.result_key(second.job_id), copied)
    with pytest.raises(IntegrityError, match="copied from another job"):
        second.result(cleanup=False)
    assert first.result() == 1


@pytest.mark.parametrize("rewrite_call", [False, True], ids=["payload", "payload-and-call"])
def test_a_replaced_payload_is_refused_inside_the_job(
    kinetic_backend: ScenarioBackend, marker: Path, rewrite_call: bool
) -> None:
    """The attacker replaces a job's payload (and, to match, the sha256 its call pins, keeping
    the call's genuine signature) before the job runs: here, by running a finished job again
    with the backend, its genuine call put back after its cleanup."""
    job = kinetic_backend.decorate()(uf.add).run_async(5)
    assert job.result(timeout=120, cleanup=False) == 5
    store = kinetic_backend.store()
    sealed_call = store.read(layout.call_key(job.job_id))
    job.cleanup()

    payload = tell_tale_pickle(marker)
    fields = msgspec.json.decode(sealed_call)
    if rewrite_call:
        fields["record"]["payload"]["sha256"] = hashlib.sha256(payload).hexdigest()
        fields["record"]["payload"]["size"] = len(payload)
        sealed_call = msgspec.json.encode(fields)
    store.write(layout.call_key(job.job_id), sealed_call)
    store.write(layout.payload_key(job.job_id), payload)
    backend_for(job.record).submit(job.record)

    assert _finished(job) is JobStatus.FAILED
    with pytest.raises(IntegrityError) as caught:
        job.result()
    assert getattr(caught.value, "job_phase", None) == "verify"
    expected = "does not match its signature" if rewrite_call else "the signed call pins"
    assert expected in str(caught.value)
    assert not marker.exists(), "the job ran the attacker's payload"
    job.cleanup()


def test_a_batchs_kept_outcome_replaced_after_collection_is_refused(
    kinetic_backend: ScenarioBackend, marker: Path
) -> None:
    """A batch collected with cleanup keeps its children's signed outcomes with the batch; a
    later collection (another process) verifies them as it would the children's own."""
    batch = kinetic_backend.decorate()(uf.add).run_async_map([1, 2])
    assert batch.results(cleanup=True) == [1, 2]
    store = kinetic_backend.store()
    key = store.list(layout.collected_prefix(batch.group_id))[0]  # kept in one or more groups
    kept = msgspec.msgpack.decode(store.read(key), type=CollectedOutcomes)
    first = kept.outcomes[0]
    forged = encode_result(Succeeded(job_id=first.job_id, value=tell_tale_pickle(marker)))
    first.envelope = _swap_body(first.envelope, forged)
    store.write(key, msgspec.msgpack.encode(kept))

    outcomes = kinetic.attach_batch(batch.group_id).results(return_exceptions=True)
    tampered = outcomes[first.index]
    assert isinstance(tampered, IntegrityError), tampered
    assert outcomes[1 - first.index] == [1, 2][1 - first.index]
    assert not marker.exists(), "a forged kept outcome was unpickled"
