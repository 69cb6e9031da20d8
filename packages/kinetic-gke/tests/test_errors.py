"""The API's error answers become Kinetic's error classes by status and reason."""

import json

import pytest
from kubernetes.client.exceptions import ApiException

from kinetic_gke.k8s.errors import AlreadyExists, Conflict, NotFound, translate


def answer(status: int, reason: str, message: str) -> ApiException:
    error = ApiException(status=status, reason=reason)
    error.body = json.dumps({"kind": "Status", "reason": reason, "message": message})
    return error


@pytest.mark.parametrize(
    ("reason", "kind", "says"),
    [
        ("AlreadyExists", AlreadyExists, "already exists"),
        ("Conflict", Conflict, "changed meanwhile"),
    ],
)
def test_a_409_is_told_apart_by_its_reason(reason: str, kind: type, says: str) -> None:
    error = translate(answer(409, reason, "the object has been modified"), "patching x")
    assert type(error) is kind
    assert (error.status, error.reason) == (409, reason)
    assert str(error).startswith(f"patching x: {says} (the object has been modified")


def test_not_found_keeps_the_apis_message() -> None:
    error = translate(answer(404, "NotFound", 'jobs "x" not found'), "reading Job x")
    assert isinstance(error, NotFound)
    assert str(error) == 'reading Job x: not found (jobs "x" not found)'
