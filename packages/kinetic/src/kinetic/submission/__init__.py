"""Turning a call into a submitted job: ids, target resolution, the record, the submission."""

from kinetic.job_ids import child_id_prefix, func_name_of, new_job_id
from kinetic.submission.call import (
    artifact_ref,
    call_descriptor,
    captured_env,
    plan_data,
    submit_call,
    upload_bundle,
)
from kinetic.submission.record import Group, job_record
from kinetic.submission.target import Target, resolve_target

__all__ = [
    "Group",
    "Target",
    "artifact_ref",
    "call_descriptor",
    "captured_env",
    "plan_data",
    "child_id_prefix",
    "func_name_of",
    "job_record",
    "new_job_id",
    "resolve_target",
    "submit_call",
    "upload_bundle",
]
