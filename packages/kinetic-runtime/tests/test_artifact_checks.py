"""What the runtime refuses from the (untrusted) store: changed artifacts and escaping bundles."""

import hashlib
import io
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest
from runtime_jobs import JobStage

from kinetic_protocol import CallDescriptor, ConfigError, Failed, Keyring
from kinetic_protocol.records import encode_json
from kinetic_protocol.signing import seal_json
from kinetic_runtime.workspace import unpack_bundle
from kinetic_testing.telltale import tell_tale_pickle


def test_a_payload_whose_sha256_differs_fails_in_verify_without_being_unpickled(
    jobs: JobStage,
) -> None:
    marker = jobs.tmp_path / "unpickled"
    payload = tell_tale_pickle(marker)
    claimed = hashlib.sha256(b"what the client submitted").hexdigest()
    run = jobs.run(jobs.stage("job-tampered", payload, payload_sha256=claimed))
    assert run.exit_code == 2, run.output
    assert isinstance(run.envelope, Failed)
    assert run.envelope.phase == "verify"
    assert claimed[:12] in run.envelope.message
    assert run.envelope.exc_type.endswith("IntegrityError")
    assert not marker.exists(), "the runtime unpickled a payload that failed verification"


def _other_key(call: CallDescriptor, keyring: Keyring) -> bytes:
    return seal_json(Keyring.generate(source="elsewhere"), "call", call.job_id, call)


def _another_jobs(call: CallDescriptor, keyring: Keyring) -> bytes:
    return seal_json(keyring, "call", "job-other", call)


def _as_a_result(call: CallDescriptor, keyring: Keyring) -> bytes:
    return seal_json(keyring, "job", call.job_id, call)


def _unsigned(call: CallDescriptor, keyring: Keyring) -> bytes:
    return encode_json(call)


def _body_changed(call: CallDescriptor, keyring: Keyring) -> bytes:
    """The genuine signature over the genuine call, with the call's text then rewritten."""
    sealed = seal_json(keyring, "call", call.job_id, call)
    return sealed.replace(b'"func_name":"test_function"', b'"func_name":"test_functioN"')


@pytest.mark.parametrize(
    ("seal", "says"),
    [
        (_other_key, "not among the trusted keys"),
        (_another_jobs, "does not match its signature"),
        (_as_a_result, "does not match its signature"),
        (_unsigned, "is not signed"),
        (_body_changed, "does not match its signature"),
    ],
    ids=["other-key", "another-jobs-call", "other-kind", "unsigned", "changed-after-signing"],
)
def test_a_call_without_this_jobs_valid_signature_fails_in_verify_and_runs_nothing(
    jobs: JobStage, seal: Callable[[CallDescriptor, Keyring], bytes], says: str
) -> None:
    marker = jobs.tmp_path / "unpickled"
    run = jobs.run(jobs.stage("job-forged", tell_tale_pickle(marker), seal=seal))
    assert run.exit_code == 2, run.output
    assert isinstance(run.envelope, Failed), run.output
    assert (run.envelope.phase, run.envelope.exc_type) == (
        "verify",
        "kinetic_protocol.errors.IntegrityError",
    )
    assert says in run.envelope.message
    assert "jobs/job-forged/call.json" in run.envelope.message
    assert not marker.exists(), "the runtime unpickled the payload of a call it did not trust"


def test_a_job_without_signing_keys_runs_nothing_and_says_why(jobs: JobStage) -> None:
    marker = jobs.tmp_path / "unpickled"
    job_id = jobs.stage("job-keyless", tell_tale_pickle(marker))
    run = jobs.run(job_id, env={"KINETIC_SIGNING_KEYS": ""})
    assert run.exit_code == 2
    assert run.envelope is None, "an envelope nobody can verify is not written"
    assert "KINETIC_SIGNING_KEYS is not set" in run.output
    assert not marker.exists()


def test_the_tell_tale_payload_is_unpickled_when_its_hash_matches(jobs: JobStage) -> None:
    """The control for the test above: with a true hash the same bytes do get unpickled."""
    marker = jobs.tmp_path / "unpickled"
    run = jobs.run(jobs.stage("job-honest", tell_tale_pickle(marker)))
    assert isinstance(run.envelope, Failed) and run.envelope.phase == "deserialize"
    assert marker.is_dir()


def _zip(*members: tuple[str, str]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, text in members:
            archive.writestr(zipfile.ZipInfo(name), text)
    return buffer.getvalue()


@pytest.mark.parametrize(
    "name",
    ["../evil.txt", "pkg/../../evil.txt", "/tmp/kinetic-absolute-evil.txt"],
    ids=["parent", "nested-parent", "absolute"],
)
def test_a_bundle_member_outside_the_workdir_refuses_the_whole_bundle(
    tmp_path: Path, name: str
) -> None:
    workdir = tmp_path / "deep" / "work"
    bundle = _zip(("ok.py", "x = 1\n"), (name, "evil\n"))
    with pytest.raises(ConfigError, match="escapes the job directory"):
        unpack_bundle(bundle, workdir)
    written = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*") if p.is_file())
    assert written == []  # not even the harmless member: nothing is unpacked
    assert not Path("/tmp/kinetic-absolute-evil.txt").exists()


def test_a_bundle_member_inside_the_workdir_is_unpacked(tmp_path: Path) -> None:
    unpack_bundle(_zip(("pkg/mod.py", "x = 1\n"), ("data.txt", "d")), tmp_path)
    assert (tmp_path / "pkg" / "mod.py").read_text() == "x = 1\n"
    assert (tmp_path / "data.txt").read_text() == "d"


def test_an_escaping_bundle_fails_the_job_in_unpack(jobs: JobStage) -> None:
    import operator

    from runtime_jobs import pickled_call

    bundle = _zip(("../../escaped.txt", "evil\n"))
    run = jobs.run(jobs.stage("job-escape", pickled_call(operator.add, 1, 1), bundle=bundle))
    assert run.exit_code == 2, run.output
    assert isinstance(run.envelope, Failed) and run.envelope.phase == "unpack"
    assert "../../escaped.txt" in run.envelope.message
    assert not (jobs.tmp_path.parent / "escaped.txt").exists()
    assert not (jobs.tmp_path / "escaped.txt").exists()
