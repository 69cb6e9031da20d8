"""How a batch's log lines are labelled: input, retry and host."""

import msgspec

from kinetic.batch.logs import prefix_lines
from kinetic.handle import JobHandle
from kinetic_protocol import BatchManifest, JobRecord


def _child(index: int, attempt: int) -> JobHandle:
    template = JobRecord(
        job_id="",
        backend="local",
        project="",
        cluster_name="",
        zone="",
        namespace="",
        bucket_name="file:///tmp/s",
        k8s_name="",
        image_uri="",
        accelerator="cpu",
        func_name="f",
        display_name="f",
        created_at="2026-01-01T00:00:00+00:00",
    )
    manifest = BatchManifest(
        group_id="grp-1",
        func_name="f",
        total_expected=9,
        job_id_prefix="f-0000abcd",
        job_template=msgspec.structs.replace(template, group_id="grp-1"),
        created_at=template.created_at,
    )
    return JobHandle.from_record(manifest.child_record(index, attempt))


def test_lines_carry_their_input_retry_and_host() -> None:
    assert list(prefix_lines(_child(3, 0), ["a\n", "b"])) == ["[3] a\n", "[3] b\n"]
    assert list(prefix_lines(_child(3, 2), ["a\n"])) == ["[3 r2] a\n"]
    per_host = ["[host 0] leader\n", "[host 1] worker\n"]
    assert list(prefix_lines(_child(7, 0), per_host)) == [
        "[7 host 0] leader\n",
        "[7 host 1] worker\n",
    ]
