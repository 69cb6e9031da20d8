"""A cluster without Kueue keeps working as before: Kinetic detects that it serves no Kueue API,
creates its Jobs unsuspended and unlabelled, and refuses ``queue=``/``priority=`` there before
anything is written, saying how to get Kueue."""

from collections.abc import Iterator
from pathlib import Path

import pytest

from kinetic_gke import GKEBackend
from kinetic_gke.k8s import ClusterConnection
from kinetic_gke.k8s.kueue_api import QUEUE_LABEL
from kinetic_protocol import (
    BackendSettings,
    ConfigError,
    JobRecord,
    PrepareRequest,
    parse_accelerator,
)
from kinetic_testing.controlplane.build import Built
from kinetic_testing.controlplane.cluster import ControlPlane

pytestmark = pytest.mark.realk8s


@pytest.fixture(scope="module")
def plane_without_kueue(
    k8s_binaries: Built, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ControlPlane]:
    directory = tmp_path_factory.mktemp("no-kueue")
    with ControlPlane(k8s_binaries, directory, lws=False, kueue=False, jobset=False) as plane:
        yield plane


@pytest.fixture
def backend(plane_without_kueue: ControlPlane) -> GKEBackend:
    namespace = plane_without_kueue.create_namespace("no-kueue")
    connection = ClusterConnection(plane_without_kueue.api_client(), namespace)
    settings = BackendSettings(project="p", cluster="plain", namespace=namespace, store_uri="x")
    return GKEBackend(settings, connection=connection)


def _prepare(backend: GKEBackend, tmp_path: Path, **asked: str) -> str:
    request = PrepareRequest(
        accelerator=parse_accelerator("cpu"),
        project_root=tmp_path,
        container_image="python:3.11-slim",
        **asked,  # type: ignore[arg-type]
    )
    return backend.prepare(request).queue


def test_jobs_on_a_cluster_without_kueue_run_unqueued(
    backend: GKEBackend, plane_without_kueue: ControlPlane, tmp_path: Path
) -> None:
    assert _prepare(backend, tmp_path) == ""
    record = JobRecord(
        job_id="plain-1",
        backend="gke",
        project="p",
        cluster_name="plain",
        zone="us-central1-a",
        namespace=backend.connection.namespace,
        bucket_name="b",
        k8s_name="plain-1",
        image_uri="python:3.11-slim",
        accelerator="cpu",
        func_name="f",
        display_name="f on cpu",
        created_at="2026-11-28T10:00:00+00:00",
    )
    backend.submit(record)
    job = plane_without_kueue.request(
        "GET", f"/apis/batch/v1/namespaces/{record.namespace}/jobs/plain-1"
    )
    assert not job["spec"].get("suspend")
    assert QUEUE_LABEL not in job["metadata"]["labels"]


@pytest.mark.parametrize("asked", [{"queue": "team-a"}, {"priority": "high"}])
def test_a_queue_or_priority_on_a_cluster_without_kueue_is_refused_saying_what_to_do(
    backend: GKEBackend, tmp_path: Path, asked: dict[str, str]
) -> None:
    with pytest.raises(ConfigError, match=r"needs Kueue.*does not serve it.*kinetic up"):
        _prepare(backend, tmp_path, **asked)


@pytest.mark.parametrize(
    "choices",
    [
        {"fallback_accelerators": (parse_accelerator("gpu-t4"),)},
        {"capacity": ("spot", "on-demand")},
    ],
)
def test_several_choices_on_a_cluster_without_kueue_are_refused_before_upload(
    backend: GKEBackend, tmp_path: Path, choices: dict[str, object]
) -> None:
    request = PrepareRequest(
        accelerator=parse_accelerator("gpu-l4"),
        project_root=tmp_path,
        container_image="python:3.11-slim",
        **choices,  # type: ignore[arg-type]
    )
    refused = r"A job of 2 choices \(gpu-l4 \(.*\)\) needs Kueue.*'plain'.*Run `kinetic up`"
    with pytest.raises(ConfigError, match=refused):
        backend.prepare(request)
