"""Keyrings and signed objects: what verifies, and what each kind of forgery is told."""

import random

import msgspec
import pytest

from kinetic_protocol import CorruptRecordError, IntegrityError, JobRecord, SigningKeyError
from kinetic_protocol.signing import Keyring, open_blob, open_json, peek_json, seal_blob, seal_json

RECORD = JobRecord(
    job_id="job-1",
    backend="local",
    project="",
    cluster_name="",
    zone="",
    namespace="",
    bucket_name="file:///s",
    k8s_name="job-1",
    image_uri="",
    accelerator="cpu",
    func_name="f",
    display_name="f",
    created_at="2026-11-25T00:00:00+00:00",
)


@pytest.fixture
def keyring() -> Keyring:
    return Keyring.generate(source="test keys")


def test_a_signed_record_stays_readable_json_and_opens_to_itself(keyring: Keyring) -> None:
    sealed = seal_json(keyring, "job", "job-1", RECORD)
    assert msgspec.json.decode(sealed)["record"]["job_id"] == "job-1"
    assert open_json(keyring, "job", "job-1", sealed, JobRecord, key="k") == RECORD
    assert peek_json(sealed, JobRecord, subject="job-1", key="k") == RECORD


@pytest.mark.parametrize(
    ("kind", "subject", "says"),
    [("call", "job-1", "does not match"), ("job", "job-2", "does not match")],
    ids=["another-kind", "another-job"],
)
def test_a_signature_holds_only_for_its_kind_and_job(
    keyring: Keyring, kind: str, subject: str, says: str
) -> None:
    sealed = seal_json(keyring, "job", "job-1", RECORD)
    with pytest.raises(IntegrityError, match=says) as caught:
        open_json(keyring, kind, subject, sealed, JobRecord, key="jobs/x/handle.json")  # type: ignore[arg-type]
    assert (caught.value.job_id, caught.value.key) == (subject, "jobs/x/handle.json")


def test_one_changed_byte_of_a_blob_is_refused(keyring: Keyring) -> None:
    sealed = seal_blob(keyring, "result", "job-1", b"the value")
    forged = sealed.replace(b"the value", b"the valuE")
    with pytest.raises(IntegrityError, match="does not match its signature"):
        open_blob(keyring, "result", "job-1", forged, key="r")
    assert open_blob(keyring, "result", "job-1", sealed, key="r") == b"the value"


def test_unsigned_and_garbled_objects_are_told_apart(keyring: Keyring) -> None:
    with pytest.raises(IntegrityError, match="is not signed"):
        open_json(keyring, "job", "job-1", msgspec.json.encode(RECORD), JobRecord, key="k")
    with pytest.raises(IntegrityError, match="is not signed"):
        open_blob(keyring, "result", "job-1", msgspec.msgpack.encode({"status": "x"}), key="k")
    with pytest.raises(CorruptRecordError, match="truncated"):
        open_json(keyring, "job", "job-1", b'{"kinetic_sig', JobRecord, key="k")


def test_bytes_that_are_no_signed_object_at_all_are_corrupt_not_unsigned(
    keyring: Keyring,
) -> None:
    """Random bytes often start like a msgpack value; they are still corrupt, not 'unsigned'
    (which tells the user to read them with an older Kinetic)."""
    rng = random.Random(32)
    garbage = [rng.randbytes(20) for _ in range(50)]
    garbage += [msgspec.msgpack.encode(7), msgspec.msgpack.encode({"kinetic_signature": 5})]
    for data in garbage:
        with pytest.raises(CorruptRecordError, match=r"jobs/j/result\.msgpack of job-1 is corrupt"):
            open_blob(keyring, "result", "job-1", data, key="jobs/j/result.msgpack")
    for text in (b"12", b'"a string"', b'{"kinetic_signature": "x", "record": {}}'):
        with pytest.raises(CorruptRecordError, match=r"jobs/j/handle\.json of job-1 is corrupt"):
            open_json(keyring, "job", "job-1", text, JobRecord, key="jobs/j/handle.json")


def test_rotation_signs_with_the_new_key_and_still_verifies_the_old(keyring: Keyring) -> None:
    old = seal_blob(keyring, "result", "job-1", b"v")
    rotated = keyring.rotated()
    assert rotated.current != keyring.current
    assert open_blob(rotated, "result", "job-1", old, key="r") == b"v"
    retired = rotated.without(keyring.current)
    with pytest.raises(IntegrityError, match="not among the trusted keys"):
        open_blob(retired, "result", "job-1", old, key="r")
    with pytest.raises(SigningKeyError, match="current signing key"):
        rotated.without(rotated.current)


def test_a_keyring_with_a_stray_entry_is_refused_naming_it(keyring: Keyring) -> None:
    entries = {**keyring.entries(), "notes.txt": "hello"}
    with pytest.raises(SigningKeyError, match=r"notes\.txt"):
        Keyring.from_entries(entries, source="s")


def _forge_mac(mac: str, how: str) -> str:
    if how == "empty":
        return ""
    if how == "half":
        return mac[: len(mac) // 2]
    last = "0" if mac[-1] != "0" else "1"
    return mac[:-1] + last


@pytest.mark.parametrize("how", ["empty", "half", "one-digit-changed"])
def test_a_short_or_altered_mac_is_refused(keyring: Keyring, how: str) -> None:
    """A prefix of the real MAC is no MAC: only the full, exact value verifies."""
    sealed_json = seal_json(keyring, "job", "job-1", RECORD)
    mac = msgspec.json.decode(sealed_json)["kinetic_signature"]["mac"]
    forged_json = sealed_json.replace(
        f'"mac":"{mac}"'.encode(), f'"mac":"{_forge_mac(mac, how)}"'.encode()
    )
    assert forged_json != sealed_json
    with pytest.raises(IntegrityError, match="does not match its signature"):
        open_json(keyring, "job", "job-1", forged_json, JobRecord, key="k")

    signature = keyring.sign("result", "job-1", b"the value")
    forged = msgspec.structs.replace(signature, mac=_forge_mac(signature.mac, how))
    forged_blob = msgspec.msgpack.encode({"body": b"the value", "kinetic_signature": forged})
    with pytest.raises(IntegrityError, match="does not match its signature"):
        open_blob(keyring, "result", "job-1", forged_blob, key="r")
