"""A local job whose artifacts live in a GCS bucket (fake-gcs-server), as on GKE."""

import os

import pytest
import scenario_funcs as uf
from scenario_support import ScenarioBackend

import kinetic
from kinetic import JobNotFoundError, JobStatus
from kinetic_protocol import layout

pytestmark = pytest.mark.gcs


def _blob_names(bucket_uri: str, prefix: str = "") -> list[str]:
    """What is really in the bucket, asked with google-cloud-storage itself."""
    from google.auth.credentials import AnonymousCredentials
    from google.cloud import storage

    assert os.environ.get("STORAGE_EMULATOR_HOST"), "the fake_gcs fixture sets the emulator"
    client = storage.Client(project="kinetic-test", credentials=AnonymousCredentials())
    bucket = bucket_uri.removeprefix("gs://")
    return sorted(blob.name for blob in client.list_blobs(bucket, prefix=prefix))


@pytest.fixture
def gcs_store(gcs_bucket: str, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("KINETIC_STORE", gcs_bucket)
    return gcs_bucket


def test_a_job_keeps_its_artifacts_in_the_bucket_and_cleanup_removes_them(
    local_backend: ScenarioBackend, gcs_store: str
) -> None:
    job = local_backend.decorate()(uf.add).run_async(20, b=22)
    assert job.bucket_name == gcs_store.removeprefix("gs://")
    job.wait()
    prefix = layout.job_prefix(job.job_id)
    names = _blob_names(gcs_store, prefix)
    kept = [name for name in names if name.startswith(layout.kept_output_prefix(job.job_id))]
    parsed = layout.parse_kept_output_key(kept[0]) if len(kept) == 1 else None
    assert parsed is not None and parsed[0] == 0, f"host 0's output of its one run: {names}"
    assert sorted(set(names) - set(kept)) == sorted(
        [
            layout.call_key(job.job_id),
            layout.job_record_key(job.job_id),
            layout.host_started_key(job.job_id, 0),
            layout.payload_key(job.job_id),
            layout.result_key(job.job_id),
        ]
    )
    bundles = _blob_names(gcs_store, "bundles/")
    assert len(bundles) == 1 and bundles[0].endswith(".zip")

    assert job.result() == 42
    assert _blob_names(gcs_store, prefix) == []
    assert _blob_names(gcs_store, "bundles/") == bundles, "bundles are shared; never cleaned"
    assert job.status() is JobStatus.NOT_FOUND


def test_attach_reads_the_handle_from_the_bucket(
    local_backend: ScenarioBackend, gcs_store: str
) -> None:
    job = local_backend.decorate()(uf.fail_with).run_async("from gcs", 3)
    job.wait()
    attached = kinetic.attach(job.job_id, backend="local")
    assert attached == job
    assert attached.status() is JobStatus.FAILED
    with pytest.raises(uf.ScenarioError, match="from gcs"):
        attached.result()
    attached.cleanup()
    assert _blob_names(gcs_store, layout.job_prefix(job.job_id)) == []
    with pytest.raises(JobNotFoundError):
        kinetic.attach(job.job_id, backend="local")


def test_an_unchanged_bundle_is_uploaded_once(
    local_backend: ScenarioBackend, gcs_store: str
) -> None:
    add = local_backend.decorate()(uf.add)
    jobs = [add.run_async(i) for i in range(2)]
    assert [job.result() for job in jobs] == [0, 1]
    assert len(_blob_names(gcs_store, "bundles/")) == 1
