"""``JobHandle`` is the "small JSON-serializable dataclass" of the spec, and a cleaned-up job's
error is a ``RuntimeError`` (issue 16)."""

import copy
import dataclasses
import inspect
import json
import pickle
from typing import Any

import pytest

from kinetic import ConfigError, JobHandle
from kinetic_protocol import JobFailedError, JobNotFoundError, JobRecord, KineticError

PUBLIC: dict[str, Any] = {
    "job_id": "train-20260417-153012-abc1234",
    "backend": "gke",
    "project": "my-project",
    "cluster_name": "kinetic-cluster",
    "zone": "us-central1-a",
    "namespace": "default",
    "bucket_name": "my-bucket",
    "k8s_name": "train-20260417-153012-abc1234",
    "image_uri": "us-docker.pkg.dev/p/kinetic/base:abc",
    "accelerator": "tpu-v5e-1",
    "func_name": "train",
    "display_name": "train on tpu-v5e-1",
    "created_at": "2026-04-17T15:30:12+00:00",
}
SPEC_SIGNATURE = [*PUBLIC, "group_id", "group_kind", "group_index", "debug"]


def _extras_handle() -> JobHandle:
    record = JobRecord(**PUBLIC, attempt=2, spot=True, backend_data={"python": "/venv/bin/py"})
    return JobHandle.from_record(record)


def test_a_handle_is_a_dataclass_whose_fields_are_the_record() -> None:
    handle = JobHandle(**PUBLIC, group_id="grp-1", group_index=3)
    assert dataclasses.is_dataclass(handle)
    names = [f.name for f in dataclasses.fields(JobHandle)]
    assert names[: len(SPEC_SIGNATURE)] == SPEC_SIGNATURE
    assert set(names) == set(JobRecord.__struct_fields__)
    positional = [
        p.name
        for p in inspect.signature(JobHandle).parameters.values()
        if p.kind is p.POSITIONAL_OR_KEYWORD
    ]
    assert positional == SPEC_SIGNATURE


def test_asdict_is_to_dict_and_json_safe() -> None:
    handle = _extras_handle()
    assert dataclasses.asdict(handle) == handle.to_dict()
    assert JobHandle.from_dict(json.loads(json.dumps(dataclasses.asdict(handle)))) == handle


def test_replace_keeps_the_protocol_extras_and_validates() -> None:
    handle = _extras_handle()
    moved = dataclasses.replace(handle, group_index=5)
    assert moved.group_index == 5
    assert (moved.attempt, moved.spot, moved.backend_data) == (2, True, {"python": "/venv/bin/py"})
    assert moved.record.group_index == 5
    assert moved != handle
    assert dataclasses.replace(moved, group_index=None) == handle
    with pytest.raises(ConfigError, match="group_index"):
        dataclasses.replace(handle, group_index="five")  # type: ignore[arg-type]


def test_a_handle_is_frozen_hashable_and_picklable() -> None:
    handle = _extras_handle()
    with pytest.raises(dataclasses.FrozenInstanceError):
        handle.job_id = "other"  # type: ignore[misc]
    assert hash(handle) == hash(handle.job_id)
    for copied in (pickle.loads(pickle.dumps(handle)), copy.copy(handle), copy.deepcopy(handle)):
        assert copied == handle and copied.record == handle.record
    assert repr(handle) == (
        "JobHandle(job_id='train-20260417-153012-abc1234', backend='gke', func='train')"
    )


def test_a_handle_keeps_its_fields_in_slots() -> None:
    """A batch holds a handle per child (100,000 of them): a per-instance dict of 35 keys,
    past the 30 that Python shares between instances, cost 850 bytes a handle, slots 300."""
    handle = _extras_handle()
    assert not hasattr(handle, "__dict__")
    assert dataclasses.replace(handle).record == handle.record


def test_from_dict_still_validates() -> None:
    with pytest.raises(ConfigError, match="missing required field"):
        JobHandle.from_dict({"job_id": "x"})
    with pytest.raises(ConfigError, match="invalid handle dict"):
        JobHandle.from_dict({**PUBLIC, "group_index": "two"})
    with pytest.raises(ConfigError, match="needs a dict"):
        JobHandle.from_dict([])  # type: ignore[arg-type]


def test_a_missing_job_is_also_a_runtime_error() -> None:
    assert issubclass(JobNotFoundError, (KineticError, LookupError))
    assert issubclass(JobNotFoundError, RuntimeError)
    assert issubclass(JobFailedError, RuntimeError)
