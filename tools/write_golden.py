"""Write the golden files of every wire record: ``tests/golden/<record>/v<N>.json`` (``.msgpack``
for result envelopes), from fixed example values.

A golden file freezes how a released schema version looks on the wire. ``tests/golden`` checks
that every one of them still decodes, and that today's encoding of the examples below still
produces the current version's bytes. So: when a record changes compatibly, today's bytes
change and the test says so; bump ``SCHEMA_VERSION`` (or, before the version is released,
rewrite it with ``--force``) and run this tool again. Old versions' files are never rewritten.

    uv run python tools/write_golden.py            # write missing files, refuse to change any
    uv run python tools/write_golden.py --check    # exit 1 if a file is missing or differs
    uv run python tools/write_golden.py --force    # rewrite the current version's files
"""

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

import msgspec

from kinetic_protocol import (
    SCHEMA_VERSION,
    ArtifactRef,
    AttemptFailure,
    BatchCancel,
    BatchChild,
    BatchChildCancelled,
    BatchCompletion,
    BatchIndexSegment,
    BatchManifest,
    BatchSubmissionError,
    CallDescriptor,
    CollectedFailure,
    CollectedFailures,
    CollectedOutcome,
    CollectedOutcomes,
    DataManifest,
    DataSpec,
    DebugOptions,
    DebugState,
    Failed,
    FailureCause,
    HostStart,
    InputChunk,
    JobCancelled,
    JobRecord,
    Mount,
    PickledInput,
    SubmitterLease,
    Succeeded,
    Volume,
)
from kinetic_protocol.capacity import Placement
from kinetic_protocol.records import encode_json, encode_result

__all__ = ["EXAMPLES", "GOLDEN_DIR", "encode", "golden_path", "main"]

GOLDEN_DIR = Path(__file__).resolve().parents[1] / "tests" / "golden"

_JOB_ID = "train-20260417-153012-abc1234"
_RECORD = JobRecord(
    job_id=_JOB_ID,
    backend="gke",
    project="my-project",
    cluster_name="kinetic-cluster",
    zone="us-central1-a",
    namespace="default",
    bucket_name="my-bucket",
    k8s_name=_JOB_ID,
    image_uri="us-docker.pkg.dev/my-project/kinetic/bundled:3f2a",
    accelerator="tpu-v5e-8",
    func_name="train",
    display_name="train on tpu-v5e-8",
    created_at="2026-04-17T15:30:12+00:00",
    group_id="grp-a1b2c3d4",
    group_kind="map",
    group_index=3,
    debug=True,
    attempt=1,
    spot=True,
    kinetic_version="0.1.0",
    backend_data={"python": "/home/me/.kinetic/venvs/3f2a/bin/python"},
    output_dir="gs://my-bucket/runs/sweep",
    timeout=3600.0,
    preemption_retries=5,
    in_array=True,
    array_offset=3,
    queue="team-a",
    priority="high",
    nodes=2,  # with slices=2 no job could run (nodes is for GPU hosts): the golden file
    slices=2,  # freezes the wire format, and every field shows only when it is not its default
    fallback_accelerators=["tpu-v6e-8"],
    capacity=["reservation:team-a-v5e", "spot"],
    max_run_duration=86400,
    mounts=[
        Mount(path="/data", kind="scratch"),
        Mount(path="/kinetic/fuse/1", kind="gcsfuse", bucket="my-bucket", prefix="imagenet"),
    ],
)
_DATA = [
    DataSpec(
        source="stored", uri=f"data/{'c' * 64}/files/", is_dir=True, label="/home/me/proj/dataset"
    ),
    DataSpec(
        source="gcs",
        uri="gs://my-bucket/imagenet/",
        is_dir=True,
        fuse=True,
        label="gs://my-bucket/imagenet/",
    ),
    DataSpec(
        source="hf",
        uri="hf://owner/name?split=train",
        is_dir=True,
        hf_trust_remote_code=True,
        label="hf://owner/name?split=train",
    ),
    DataSpec(
        source="local",
        uri="/home/me/proj/config.json",
        is_dir=False,
        name="config.json",
        label="/home/me/proj/config.json",
    ),
]
_DEBUG = DebugOptions(host="127.0.0.1", port=0, wait_timeout=30.0)
_PAYLOAD = ArtifactRef(key=f"jobs/{_JOB_ID}/payload.pkl", sha256="a" * 64, size=812)
_CHUNK = InputChunk(
    start=1000,
    count=1000,
    ref=ArtifactRef(key="groups/grp-a1b2c3d4/inputs/001000.msgpack", sha256="c" * 64, size=90210),
)
_OUTCOME = CollectedOutcome(
    index=3,
    job_id="train-a1b2c3d4-3-r1",
    envelope=b"\x85\xa6status\xa9succeeded",
    kind="host-result",
    placement=Placement(accelerator="tpu-v6e-8", capacity="spot", flavor="kinetic-tpu-v6e-8-spot"),
)

_FAILURE = CollectedFailure(
    index=7,
    job_id="train-20260417-153012-a1b2c3d4-7-r1",
    failure=AttemptFailure(
        cause=FailureCause.OOM,
        reason="OOMKilled, exit 137",
        attempt=1,
        phase="run",
        exit_code=137,
    ),
    last_lines="step 1199 loss 0.41\nstep 1200 loss 0.40\n",
)
EXAMPLES: dict[str, msgspec.Struct] = {
    "job_record": _RECORD,
    "artifact_ref": _PAYLOAD,
    "call_descriptor": CallDescriptor(
        job_id=_JOB_ID,
        func_name="train",
        payload=_PAYLOAD,
        bundle=ArtifactRef(key=f"bundles/{'b' * 64}.zip", sha256="b" * 64, size=40960),
        workdir="scripts",
        sys_path=["scripts", "src", "."],
        env_names=["WANDB_API_KEY", "WANDB_PROJECT"],
        output_dir="gs://my-bucket/outputs/" + _JOB_ID,
        python_version="3.11",
        requirements=["numpy==2.1.0", "jax[tpu]==0.4.35"],
        debug=_DEBUG,
        data=_DATA,
        volumes=[Volume(path="/data", data=0)],
        inputs=[_CHUNK],
        function_data=[0],
    ),
    "pickled_input": PickledInput(arguments=b"\x80\x05pickled-args", data=[1]),
    "data_manifest": DataManifest(
        content_hash="c" * 64,
        is_dir=True,
        files=10000,
        bytes=1073741824,
        name="train.csv",
        uploaded_at="2026-04-17T15:30:10+00:00",
    ),
    "input_chunk": _CHUNK,
    "debug_options": _DEBUG,
    "debug_state": DebugState(
        job_id=_JOB_ID,
        phase="waiting",
        host="0.0.0.0",
        port=5678,
        pid=7,
        workdir="/tmp/kinetic-" + _JOB_ID,
        updated_at="2026-04-17T15:30:21.000+00:00",
    ),
    "batch_manifest": BatchManifest(
        group_id="grp-a1b2c3d4",
        func_name="train",
        total_expected=100,
        job_id_prefix="train-a1b2c3d4",
        job_template=msgspec.structs.replace(_RECORD, group_id=None, group_kind=None),
        created_at="2026-04-17T15:30:12+00:00",
        name="sweep",
        tags={"team": "research"},
        retries=2,
        retry_on=["exit", "oom"],
        max_concurrent=16,
        max_cost=50.0,
        fail_fast=True,
        cancel_running_on_fail=True,
        input_mode="kwargs",
        signed_records=True,
        array_job="train-a1b2c3d4",
        array_part_size=40,
    ),
    "batch_child": BatchChild(
        group_id="grp-a1b2c3d4",
        index=3,
        attempt=1,
        job_id="train-a1b2c3d4-3-r1",
        submitted_at="2026-04-17T15:30:14+00:00",
    ),
    "batch_index_segment": BatchIndexSegment(
        group_id="grp-a1b2c3d4",
        completed_at="2026-04-17T15:40:02.125+00:00",
        part=1,
        parts=2,
        start=10000,
        attempts=[0, 1, -1, 0],
    ),
    "batch_submission_error": BatchSubmissionError(
        group_id="grp-a1b2c3d4",
        index=7,
        exc_type="kinetic_protocol.errors.SerializationError",
        message="Argument 0 of train() cannot be pickled",
        failed_at="2026-04-17T15:30:13.250+00:00",
    ),
    "batch_child_cancelled": BatchChildCancelled(
        group_id="grp-a1b2c3d4",
        index=4,
        attempt=0,
        cancelled_at="2026-04-17T15:30:40.125+00:00",
        reason="the batch was cancelled",
    ),
    "batch_cancel": BatchCancel(
        group_id="grp-a1b2c3d4", requested_at="2026-04-17T15:31:02.000+00:00"
    ),
    "batch_completion": BatchCompletion(
        group_id="grp-a1b2c3d4",
        submitted=99,
        finished_at="2026-04-17T15:31:00+00:00",
        cancelled=True,
        fail_fast=True,
        error="StoreError: Could not write 'groups/grp-a1b2c3d4/children/000099-000.json'",
        cost_capped="list cost $50.02 reached max_cost=$50",
    ),
    "submitter_lease": SubmitterLease(
        group_id="grp-a1b2c3d4",
        epoch=1,
        owner="5f0c2a9e71d3b846",
        host="laptop",
        pid=4242,
        started_at="2026-04-17T15:35:00.000+00:00",
        heartbeat_at="2026-04-17T15:35:05.000+00:00",
        lease_seconds=30.0,
        submitted=57,
        machine="300d0976-068c-434d-9e02-e8b2ed09081b/pid:4026531836",
        process="4242:1234567",
    ),
    "collected_outcome": _OUTCOME,
    "collected_outcomes": CollectedOutcomes(
        group_id="grp-a1b2c3d4",
        outcomes=[_OUTCOME],
        collected_at="2026-04-17T16:00:00+00:00",
    ),
    "collected_failure": _FAILURE,
    "collected_failures": CollectedFailures(
        group_id="grp-a1b2c3d4",
        failures=[_FAILURE],
        collected_at="2026-04-17T16:00:00+00:00",
    ),
    "result_succeeded": Succeeded(
        job_id=_JOB_ID,
        value=b"\x80\x05\x95\x0b\x00\x00\x00\x00\x00\x00\x00}\x94\x8c\x04loss\x94G?\xbf|\xed\x91h"
        b"r\xb0s.",
        started_at="2026-04-17T15:30:20.000+00:00",
        finished_at="2026-04-17T16:30:20.000+00:00",
    ),
    "result_failed": Failed(
        job_id=_JOB_ID,
        phase="run",
        exc_type="mymodel.DivergedError",
        message="loss is nan at step 1200",
        traceback=(
            "Traceback (most recent call last):\n"
            '  File "/work/mymodel/train.py", line 42, in train\n'
            '    raise DivergedError("loss is nan at step 1200")\n'
            "mymodel.DivergedError: loss is nan at step 1200\n"
        ),
        exception=b"\x80\x05pickled-exception-bytes",
        started_at="2026-04-17T15:30:20.000+00:00",
        finished_at="2026-04-17T15:45:02.500+00:00",
        host=2,
        hosts=4,
    ),
    "job_cancelled": JobCancelled(
        job_id=_JOB_ID,
        attempt=1,
        cancelled_at="2026-04-17T15:40:00+00:00",
        reason="cancelled by the user",
    ),
    "host_start": HostStart(
        job_id=_JOB_ID,
        host=2,
        hosts=4,
        instance="3c1f7a52-9b0e-4d7e-8a11-5f6e2d9c0b44",
        started_at="2026-04-17T15:30:19.500+00:00",
    ),
}
"""One fixed example per record; the result envelope is msgpack, every other record JSON."""


def _is_msgpack(value: msgspec.Struct) -> bool:
    """Records that carry pickled bytes are msgpack; every other record is JSON."""
    carries_bytes = Succeeded | Failed | CollectedOutcomes | CollectedOutcome | PickledInput
    return isinstance(value, carries_bytes)


def encode(value: msgspec.Struct) -> bytes:
    """Today's wire bytes of ``value``, exactly as Kinetic writes them to a store."""
    if isinstance(value, Succeeded | Failed):
        return encode_result(value)
    if _is_msgpack(value):
        return msgspec.msgpack.encode(value)
    return encode_json(value)


def golden_path(name: str, version: int = SCHEMA_VERSION) -> Path:
    suffix = ".msgpack" if _is_msgpack(EXAMPLES[name]) else ".json"
    return GOLDEN_DIR / name / f"v{version}{suffix}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--check", action="store_true", help="only compare; exit 1 on a difference")
    mode.add_argument("--force", action="store_true", help="rewrite the current version's files")
    options = parser.parse_args(argv)
    say: Callable[[str], None] = print
    problems = 0
    for name, value in EXAMPLES.items():
        path, data = golden_path(name), encode(value)
        current = path.read_bytes() if path.exists() else None
        if current == data:
            continue
        if options.check or (current is not None and not options.force):
            problems += 1
            state = "is missing" if current is None else "differs from today's encoding"
            say(f"{path.relative_to(GOLDEN_DIR.parent.parent)} {state}.")
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        say(f"wrote {path.relative_to(GOLDEN_DIR.parent.parent)}")
    if problems and not options.check:
        say(
            "A released schema's golden file must not change: bump SCHEMA_VERSION for an "
            "incompatible change, or pass --force while this version is unreleased."
        )
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
