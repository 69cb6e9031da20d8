"""``JobHandle.to_dict``/``from_dict``: a plain, JSON-safe description that rebuilds a handle."""

import json
from typing import Any

import pytest

from kinetic import ConfigError, JobHandle

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


def test_the_constructor_takes_the_spec_signature_and_exposes_each_field() -> None:
    handle = JobHandle(**PUBLIC, group_id="grp-1", group_kind="map", group_index=2, debug=True)
    for name, value in PUBLIC.items():
        assert getattr(handle, name) == value
    assert (handle.group_id, handle.group_kind, handle.group_index, handle.debug) == (
        "grp-1",
        "map",
        2,
        True,
    )


def test_optional_fields_default_as_the_spec_says() -> None:
    handle = JobHandle(**PUBLIC)
    assert (handle.group_id, handle.group_kind, handle.group_index, handle.debug) == (
        None,
        None,
        None,
        False,
    )


def test_to_dict_is_json_safe_and_from_dict_rebuilds_an_equal_handle() -> None:
    handle = JobHandle(**PUBLIC, group_id="grp-1", group_kind="map", group_index=2)
    data = handle.to_dict()
    assert {k: data[k] for k in PUBLIC} == PUBLIC
    assert json.loads(json.dumps(data)) == data
    rebuilt = JobHandle.from_dict(json.loads(json.dumps(data)))
    assert rebuilt == handle
    assert hash(rebuilt) == hash(handle)
    assert rebuilt.to_dict() == data


def test_from_dict_ignores_keys_it_does_not_know() -> None:
    rebuilt = JobHandle.from_dict({**PUBLIC, "from_the_future": [1, 2], "placement": "high"})
    assert rebuilt == JobHandle(**PUBLIC)


def test_the_queue_and_priority_class_survive_a_round_trip() -> None:
    handle = JobHandle(**PUBLIC, queue="team-a", priority="high")
    data = json.loads(json.dumps(handle.to_dict()))
    assert (data["queue"], data["priority"]) == ("team-a", "high")
    assert JobHandle.from_dict(data) == handle
    assert JobHandle.from_dict(PUBLIC).queue == "" and JobHandle.from_dict(PUBLIC).priority == ""


def test_from_dict_names_every_missing_field() -> None:
    partial = {k: v for k, v in PUBLIC.items() if k not in {"zone", "created_at"}}
    with pytest.raises(ConfigError) as caught:
        JobHandle.from_dict(partial)
    message = str(caught.value)
    assert "zone" in message and "created_at" in message
    assert "job_id" not in message.split("missing", 1)[1].split(".", maxsplit=1)[0]


def test_from_dict_refuses_a_field_of_the_wrong_type() -> None:
    with pytest.raises(ConfigError, match="group_index"):
        JobHandle.from_dict({**PUBLIC, "group_index": "two"})


@pytest.mark.parametrize("value", [None, [], "train-1"])
def test_from_dict_refuses_what_is_not_a_dict(value: object) -> None:
    with pytest.raises(ConfigError, match="needs a dict"):
        JobHandle.from_dict(value)  # type: ignore[arg-type]


def test_repr_names_the_job() -> None:
    assert PUBLIC["job_id"] in repr(JobHandle(**PUBLIC))


def train() -> None:
    """The submitted function (a handle records its name)."""


def _context(**overrides: Any) -> Any:
    """A live job context as a submitter holds it: the job's place, image and function."""
    from types import SimpleNamespace

    fields = {
        key: PUBLIC[key]
        for key in ("job_id", "project", "cluster_name", "zone", "bucket_name", "image_uri")
    }
    return SimpleNamespace(**fields, accelerator="tpu-v5e-1", func=train, **overrides)


def test_from_job_context_takes_the_api_reference_signature() -> None:
    handle = JobHandle.from_job_context(
        _context(created_at=PUBLIC["created_at"]),
        backend_name="gke",
        namespace="default",
        k8s_name=PUBLIC["k8s_name"],
    )
    assert handle.to_dict() | {"kinetic_version": ""} == JobHandle(**PUBLIC).to_dict() | {
        "kinetic_version": ""
    }
    assert JobHandle.from_dict(handle.to_dict()) == handle


def test_from_job_context_keeps_the_batch_identity_and_names_what_is_missing() -> None:
    child = JobHandle.from_job_context(
        _context(group_id="grp-1", group_kind="map", group_index=3, display_name="shown"),
        "pathways",
        "team-a",
        "train-1",
    )
    assert (child.group_id, child.group_index, child.display_name) == ("grp-1", 3, "shown")
    assert (child.backend, child.namespace, child.k8s_name) == ("pathways", "team-a", "train-1")
    incomplete = _context()
    del incomplete.image_uri, incomplete.zone
    with pytest.raises(ConfigError, match="lacks zone, image_uri"):
        JobHandle.from_job_context(incomplete, "gke", "default", "train-1")
    with pytest.raises(ConfigError, match="group_index"):
        JobHandle.from_job_context(_context(group_index="three"), "gke", "default", "x")
