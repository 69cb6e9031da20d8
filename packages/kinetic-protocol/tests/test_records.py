"""Records survive the wire, ignore a newer writer's extra fields, refuse what they cannot read."""

import json

import msgspec
import pytest

from kinetic_protocol import (
    SCHEMA_VERSION,
    ArtifactRef,
    BatchChild,
    BatchCompletion,
    BatchSubmissionError,
    CallDescriptor,
    CorruptRecordError,
    Failed,
    JobRecord,
    SchemaVersionError,
    SubmitterLease,
    Succeeded,
)
from kinetic_protocol.records import decode_json, decode_result, encode_json, encode_result

RECORD = JobRecord(
    job_id="train-20260417-153012-abc1234",
    backend="gke",
    project="my-project",
    cluster_name="kinetic-cluster",
    zone="us-central1-a",
    namespace="default",
    bucket_name="my-bucket",
    k8s_name="train-20260417-153012-abc1234",
    image_uri="us-docker.pkg.dev/my-project/kinetic/base:abc",
    accelerator="tpu-v5e-8",
    func_name="train",
    display_name="train on tpu-v5e-8",
    created_at="2026-04-17T15:30:12+00:00",
    group_id="grp-1234",
    group_kind="map",
    group_index=3,
    attempt=1,
    spot=True,
    kinetic_version="0.1.0",
)
CALL = CallDescriptor(
    job_id=RECORD.job_id,
    func_name="train",
    payload=ArtifactRef(key="jobs/x/payload.pkl", sha256="ab" * 32, size=120),
    bundle=ArtifactRef(key="bundles/cd.zip", sha256="cd" * 32, size=4096),
    workdir="scripts",
    sys_path=[".", "src"],
    env_names=["WANDB_API_KEY"],
    output_dir="gs://my-bucket/outputs/x",
    python_version="3.11",
    requirements=["numpy==2.0"],
)
ROUND_TRIP = [
    RECORD,
    CALL,
    ArtifactRef(key="bundles/ef.zip", sha256="ef" * 32, size=1),
    BatchChild(group_id="grp-1", index=4, attempt=2, job_id="f-1-4-r2", submitted_at="t"),
    BatchSubmissionError(group_id="grp-1", index=5, exc_type="SerializationError", message="m"),
    BatchCompletion(group_id="grp-1", submitted=9, finished_at="t", cancelled=True),
]


@pytest.mark.parametrize("record", ROUND_TRIP, ids=lambda r: type(r).__name__)
def test_records_round_trip_through_json(record: msgspec.Struct) -> None:
    data = encode_json(record)
    assert isinstance(json.loads(data), dict), "records are readable JSON objects"
    assert decode_json(data, type(record), what="k") == record


def test_a_job_record_spells_the_public_handle_fields_first() -> None:
    public = (
        "job_id",
        "backend",
        "project",
        "cluster_name",
        "zone",
        "namespace",
        "bucket_name",
        "k8s_name",
        "image_uri",
        "accelerator",
        "func_name",
        "display_name",
        "created_at",
        "group_id",
        "group_kind",
        "group_index",
        "debug",
    )
    assert JobRecord.__struct_fields__[: len(public)] == public
    assert RECORD.schema_version == SCHEMA_VERSION


@pytest.mark.parametrize(
    ("bucket_name", "store_uri"),
    [
        ("my-bucket", "gs://my-bucket"),
        ("file:///home/me/.kinetic/store", "file:///home/me/.kinetic/store"),
    ],
)
def test_the_store_uri_of_a_record_comes_from_its_bucket_name(
    bucket_name: str, store_uri: str
) -> None:
    assert msgspec.structs.replace(RECORD, bucket_name=bucket_name).store_uri == store_uri


def test_unknown_fields_from_a_newer_writer_are_ignored() -> None:
    raw = json.loads(encode_json(RECORD))
    raw["priority_class"] = "high"
    raw["nested_future"] = {"a": [1, 2]}
    assert decode_json(json.dumps(raw).encode(), JobRecord, what="k") == RECORD


def test_missing_optional_fields_take_their_defaults() -> None:
    raw = json.loads(encode_json(CALL))
    for optional in ("bundle", "workdir", "sys_path", "env", "env_names", "output_dir"):
        del raw[optional]
    del raw["schema_version"]
    call = decode_json(json.dumps(raw).encode(), CallDescriptor, what="k")
    assert (call.bundle, call.workdir, call.sys_path, call.env, call.env_names) == (
        None,
        ".",
        [],
        {},
        [],
    )
    assert call.schema_version == SCHEMA_VERSION


def test_a_newer_schema_version_names_the_object_and_what_to_upgrade() -> None:
    raw = json.loads(encode_json(RECORD))
    raw["schema_version"] = SCHEMA_VERSION + 1
    with pytest.raises(SchemaVersionError) as caught:
        decode_json(json.dumps(raw).encode(), JobRecord, what="gs://b/jobs/j/handle.json")
    message = str(caught.value)
    assert "gs://b/jobs/j/handle.json" in message
    assert str(SCHEMA_VERSION + 1) in message
    assert "Upgrade kinetic" in message


@pytest.mark.parametrize(
    "data",
    [b"", b"{not json", encode_json(RECORD)[:40], b"\xff\xfe\x00"],
    ids=["empty", "garbage", "truncated", "binary"],
)
def test_corrupt_json_raises_corrupt_record_error_naming_the_object(data: bytes) -> None:
    with pytest.raises(CorruptRecordError, match=r"jobs/j/handle\.json"):
        decode_json(data, JobRecord, what="jobs/j/handle.json")


@pytest.mark.parametrize("data", [b"[1, 2]", b'"text"', b"42"], ids=["list", "string", "number"])
def test_json_that_is_not_an_object_is_corrupt(data: bytes) -> None:
    with pytest.raises(CorruptRecordError, match=r"jobs/j/call\.json should hold a JSON object"):
        decode_json(data, CallDescriptor, what="jobs/j/call.json")


def test_a_field_of_the_wrong_type_is_corrupt_and_named() -> None:
    raw = json.loads(encode_json(RECORD))
    raw["group_index"] = "three"
    with pytest.raises(
        CorruptRecordError, match=r"handle\.json is not a valid JobRecord"
    ) as caught:
        decode_json(json.dumps(raw).encode(), JobRecord, what="handle.json")
    assert "group_index" in str(caught.value)


def test_a_record_missing_a_required_field_is_corrupt() -> None:
    raw = json.loads(encode_json(RECORD))
    del raw["job_id"]
    with pytest.raises(CorruptRecordError, match="job_id"):
        decode_json(json.dumps(raw).encode(), JobRecord, what="handle.json")


# --- the result envelope: a tagged union in msgpack -----------------------------------------

SUCCEEDED = Succeeded(job_id="j", value=b"\x80\x05K*.", started_at="a", finished_at="b")
FAILED = Failed(
    job_id="j",
    phase="run",
    exc_type="mymod.MyError",
    message="boom",
    traceback='Traceback (most recent call last):\n  File "m.py", line 1\nMyError: boom\n',
    exception=b"\x80\x05pickled",
)


@pytest.mark.parametrize("envelope", [SUCCEEDED, FAILED], ids=["succeeded", "failed"])
def test_result_envelopes_round_trip_as_their_own_variant(envelope: Succeeded | Failed) -> None:
    decoded = decode_result(encode_result(envelope), what="r")
    assert type(decoded) is type(envelope)
    assert decoded == envelope


@pytest.mark.parametrize(
    ("envelope", "tag"), [(SUCCEEDED, "succeeded"), (FAILED, "failed")], ids=["s", "f"]
)
def test_the_envelope_is_tagged_by_status(envelope: Succeeded | Failed, tag: str) -> None:
    assert msgspec.msgpack.decode(encode_result(envelope))["status"] == tag


def _envelope_bytes(**changes: object) -> bytes:
    raw = msgspec.msgpack.decode(encode_result(SUCCEEDED))
    raw.update(changes)
    return msgspec.msgpack.encode(raw)


def test_an_unknown_envelope_tag_asks_to_upgrade() -> None:
    with pytest.raises(SchemaVersionError, match=r"'cancelled'.*Upgrade kinetic") as caught:
        decode_result(_envelope_bytes(status="cancelled"), what="jobs/j/result.msgpack")
    assert "jobs/j/result.msgpack" in str(caught.value)


def test_a_newer_envelope_version_asks_to_upgrade() -> None:
    with pytest.raises(SchemaVersionError, match=r"jobs/j/result\.msgpack"):
        decode_result(
            _envelope_bytes(schema_version=SCHEMA_VERSION + 1), what="jobs/j/result.msgpack"
        )


def test_unknown_envelope_fields_are_ignored() -> None:
    assert decode_result(_envelope_bytes(peak_memory=123), what="r") == SUCCEEDED


@pytest.mark.parametrize(
    "data",
    [b"", b"\xc1garbage", encode_result(FAILED)[:10], msgspec.msgpack.encode({"status": "failed"})],
    ids=["empty", "garbage", "truncated", "missing-fields"],
)
def test_a_corrupt_envelope_names_the_object(data: bytes) -> None:
    with pytest.raises(CorruptRecordError, match=r"jobs/j/result\.msgpack"):
        decode_result(data, what="jobs/j/result.msgpack")


def test_records_and_states_are_left_out_of_the_cycle_collector() -> None:
    """A batch of 10,000 holds 10,000 records and each poll makes 10,000 states; none can be
    part of a reference cycle (their fields are strings, numbers and containers of them), so
    the garbage collector need not walk them. Walking them took 0.1 to 0.2 s of each poll."""
    import gc

    from kinetic_protocol import JobState, JobStatus

    assert not gc.is_tracked(RECORD)
    assert not gc.is_tracked(msgspec.structs.replace(RECORD, backend_data={"a": "b"}))
    assert not gc.is_tracked(JobState(status=JobStatus.RUNNING))


def test_a_lease_written_before_machine_identities_still_decodes() -> None:
    """The golden lease as it was before ``machine`` and ``process``: an older submitter's
    lease reads with both empty, so only its heartbeat says whether it is gone."""
    older = (
        b'{"group_id":"grp-a1b2c3d4","epoch":1,"owner":"5f0c2a9e71d3b846","host":"laptop",'
        b'"pid":4242,"started_at":"2026-04-17T15:35:00.000+00:00","heartbeat_at":'
        b'"2026-04-17T15:35:05.000+00:00","lease_seconds":30.0,"submitted":57,'
        b'"schema_version":1}'
    )
    lease = decode_json(older, SubmitterLease, what="lease/0001.json")
    assert (lease.host, lease.pid, lease.machine, lease.process) == ("laptop", 4242, "", "")
