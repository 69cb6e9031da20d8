"""An array Job records the indexes a cleanup deleted, so a poll in any process reads them as
gone without listing their pods; two cleanups at once keep both indexes."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from kinetic_gke import array_states, arrays
from kinetic_gke.array_batches import _record_cleaned
from kinetic_gke.array_polls import ArrayPollMemory
from kinetic_gke.k8s import ClusterConnection
from kinetic_testing.controlplane.cluster import ControlPlane


@pytest.mark.parametrize(
    ("indexes", "text"),
    [(set(), ""), ({4}, "4"), ({0, 1, 2, 3, 7}, "0-3,7"), ({9, 1, 2, 5, 6}, "1-2,5-6,9")],
)
def test_indexes_are_written_as_the_job_controller_writes_them(
    indexes: set[int], text: str
) -> None:
    assert array_states.format_indexes(indexes) == text
    assert array_states.parse_indexes(text) == indexes


@pytest.fixture
def connection(real_k8s: ControlPlane, k8s_namespace: str) -> Iterator[ClusterConnection]:
    api = real_k8s.api_client()
    yield ClusterConnection(api, k8s_namespace)
    api.close()


def _suspended_job(connection: ClusterConnection, name: str) -> dict:
    body = {
        "metadata": {"name": name},
        "spec": {
            "suspend": True,
            "completions": 8,
            "parallelism": 1,
            "completionMode": "Indexed",
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [{"name": "main", "image": "python:3.11-slim"}],
                }
            },
        },
    }
    job = arrays.JOBS.create(connection, body)
    assert job is not None
    return job


def test_two_cleanups_from_stale_reads_both_stay_recorded(connection: ClusterConnection) -> None:
    stale = _suspended_job(connection, "array-cleaned")
    _record_cleaned(connection, stale, 2)
    _record_cleaned(connection, stale, 5)  # from the read before the first was recorded
    _record_cleaned(connection, stale, 2)  # again: nothing changes
    job = arrays.JOBS.get(connection, "array-cleaned")
    assert job is not None
    recorded = job["metadata"]["annotations"][arrays.CLEANED_INDEXES]
    assert array_states.parse_indexes(recorded) == {2, 5}

    fresh = ArrayPollMemory()  # another process's poll, which never saw the cleanups
    known = fresh.learn(connection.namespace, job, [], "2026-01-01T00:00:00Z")
    assert known.cleaned == {2, 5}
