"""The ``gke`` backend through the ``kinetic`` client, the runtime and fake-gcs-server: what a
user sees when the cluster misbehaves, what a batch with retries does about it, and the
promises about polling, discovery and the kubeconfig.

User functions live in ``gke_userfuncs``, which the pods import from the code bundle.
"""

import hashlib
import operator
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import cloudpickle
import gke_userfuncs as uf
import pytest
from gke_test_support import HOLD, IMAGE, PROJECT, GkeEnv, make_record

import kinetic
import kinetic_gke
from kinetic import BatchError, JobFailedError
from kinetic_gke import GKEBackend
from kinetic_gke.labels import group_selector, job_selector
from kinetic_protocol import (
    ArtifactRef,
    BackendError,
    BackendSettings,
    CallDescriptor,
    JobStatus,
    Succeeded,
    layout,
)
from kinetic_protocol.records import decode_result, encode_json
from kinetic_runtime.stores import open_store
from kinetic_testing.k8s import ApiFailure, ImagePullFailure, OOMKill, Preemption, Unschedulable

pytestmark = [pytest.mark.k8s, pytest.mark.gcs]


def _remote(fn: Callable[..., Any]) -> Any:
    return kinetic.run(accelerator="cpu", backend="gke", container_image=IMAGE)(fn)


def _open_when(condition: Callable[[], object], gate: Path) -> threading.Thread:
    def opener() -> None:
        deadline = time.monotonic() + 60
        while not condition() and time.monotonic() < deadline:
            time.sleep(0.01)
        gate.touch()

    thread = threading.Thread(target=opener, daemon=True)
    thread.start()
    return thread


# -- what a user sees --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("make_fault", "shown"),
    [
        (lambda: OOMKill(selector="app=kinetic"), ["FAILED (OOMKilled, exit 137)"]),
        (lambda: Preemption(selector="app=kinetic"), ["FAILED (node shutdown or spot preemption"]),
        (lambda: ImagePullFailure(selector="app=kinetic"), ["ImagePull", f'image "{IMAGE}"']),
        (lambda: Unschedulable(selector="app=kinetic"), ["FAILED (Unschedulable for "]),
    ],
    ids=["oom-kill", "spot-preemption", "image-pull", "unschedulable"],
)
def test_a_job_ended_by_the_cluster_raises_saying_why_and_is_kept(
    gke_env: GkeEnv,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    make_fault: Callable[[], Any],
    shown: list[str],
) -> None:
    monkeypatch.setenv("KINETIC_UNSCHEDULABLE_TIMEOUT", "1")
    gke_env.sim.inject(make_fault())
    job = _remote(uf.hold_until).run_async(str(tmp_path / "never-opened"))
    with pytest.raises(JobFailedError) as caught:
        job.result(timeout=60)
    message = str(caught.value)
    assert job.job_id in message
    assert all(part in message for part in shown), message
    assert job.status() is JobStatus.FAILED
    assert open_store(gke_env.bucket).exists(layout.job_record_key(job.job_id))
    assert gke_env.sim.job(job.job_id) is not None, "a failed job is kept for its logs"


def test_an_api_failure_on_submit_is_a_backend_error_and_leaves_nothing_behind(
    gke_env: GkeEnv,
) -> None:
    gke_env.sim.inject(ApiFailure(method="POST", path_contains="/jobs", code=500, times=None))
    with pytest.raises(BackendError) as caught:
        _remote(operator.add).run_async(1, 2)
    message = str(caught.value)
    assert "creating Job add-" in message
    assert "500" in message
    assert open_store(gke_env.bucket).list("jobs/") == []
    assert gke_env.sim.jobs() == []
    assert kinetic.list_jobs(backend="gke") == []


# -- a batch -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "make_fault",
    [
        lambda: OOMKill(selector="kinetic.dev/group-index=1", times=1),
        lambda: Preemption(selector="kinetic.dev/group-index=1", times=1),
    ],
    ids=["oom-kill", "spot-preemption"],
)
def test_a_batch_retries_a_child_the_cluster_killed_and_keeps_the_failed_attempts_artifacts(
    gke_env: GkeEnv, tmp_path: Path, make_fault: Callable[[], Any]
) -> None:
    fault = gke_env.sim.inject(make_fault())
    gate = tmp_path / "gate"
    opener = _open_when(lambda: fault.hits, gate)
    batch = _remote(uf.square_after).run_async_map(
        [(1, str(gate)), (2, str(gate)), (3, str(gate))], retries=1
    )

    assert batch.results(timeout=120) == [1, 4, 9]
    opener.join()
    retried = batch.jobs[1]
    assert retried is not None and retried.attempt == 1
    first_attempt = retried.job_id.removesuffix("-r1")
    assert len(fault.hits) == 1 and fault.hits[0].startswith(first_attempt)
    assert gke_env.sim.job(first_attempt) is None, "the failed attempt's Job was deleted"
    store = open_store(gke_env.bucket)
    assert store.exists(layout.job_record_key(first_attempt)), "its artifacts are kept"
    assert store.exists(layout.call_key(first_attempt))
    assert [job.attempt for job in batch.jobs if job is not None] == [0, 1, 0]


def test_a_batch_without_retries_reports_the_killed_child(gke_env: GkeEnv, tmp_path: Path) -> None:
    fault = gke_env.sim.inject(OOMKill(selector="kinetic.dev/group-index=1", times=1))
    gate = tmp_path / "gate"
    opener = _open_when(lambda: fault.hits, gate)
    batch = _remote(uf.square_after).run_async_map([(1, str(gate)), (2, str(gate))])
    with pytest.raises(BatchError) as caught:
        batch.results(timeout=120)
    opener.join()
    assert caught.value.partial_results == [1, None]
    failed = batch.failures()
    assert [job.group_index for job in failed] == [1]
    assert failed[0].status_detail().describe() == "FAILED (OOMKilled, exit 137)"


def test_each_poll_of_a_batch_is_one_job_list_by_the_groups_label(
    gke_env: GkeEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    polls: list[list[str]] = []
    original = GKEBackend.statuses

    def counted(self: GKEBackend, records: Any) -> Any:
        polls.append([record.job_id for record in records])
        return original(self, records)

    monkeypatch.setattr(GKEBackend, "statuses", counted)
    gke_env.sim.clear_requests()
    batch = _remote(operator.mul).run_async_map([(i, i) for i in range(5)])
    assert batch.results(timeout=120, cleanup=False) == [0, 1, 4, 9, 16]

    requests = gke_env.sim.requests
    job_lists = [r for r in requests if r.method == "GET" and r.path.endswith("/jobs")]
    job_reads = [r for r in requests if r.method == "GET" and "/jobs/" in r.path]
    pod_lists = [r for r in requests if r.method == "GET" and r.path.endswith("/pods")]
    assert polls, "the batch was observed"
    assert len(job_lists) == len(polls), "one Job LIST per poll, whatever the batch's size"
    assert job_reads == [], "no per-job reads while polling"
    assert len(pod_lists) <= len(polls)
    children = {job.job_id for job in batch.jobs if job is not None}
    allowed = {group_selector(batch.group_id)} | {job_selector(c) for c in children}
    selectors = [r.query["labelSelector"] for r in job_lists]
    assert set(selectors) <= allowed
    by_group = selectors.count(group_selector(batch.group_id))
    assert by_group == sum(1 for ids in polls if len(ids) > 1) > 0, "several children: by group"
    batch.cleanup()


# -- discovery, attach, standalone submission --------------------------------------------------


def test_list_jobs_finds_jobs_by_label_and_hydrates_them_from_the_bucket(
    gke_env: GkeEnv, tmp_path: Path
) -> None:
    gate = tmp_path / "gate"
    submitted = [_remote(uf.hold_until).run_async(str(gate), i) for i in range(2)]
    # A Kinetic Job whose record is not in the bucket is skipped, not an error.
    stray = GKEBackend(BackendSettings(project=PROJECT, store_uri=gke_env.bucket), command=HOLD)
    stray.submit(make_record("stray-1", bucket_name=gke_env.bucket.removeprefix("gs://")))

    listed = sorted(kinetic.list_jobs(backend="gke"), key=lambda job: job.job_id)
    assert listed == sorted(submitted, key=lambda job: job.job_id)
    assert all(job.image_uri == IMAGE and job.func_name == "hold_until" for job in listed)
    attached = kinetic.attach(submitted[0].job_id, backend="gke")
    assert attached == submitted[0]

    gate.touch()
    assert [job.result(timeout=60) for job in submitted] == [0, 1]
    assert kinetic.list_jobs(backend="gke") == []


def test_submit_job_runs_a_record_prepared_without_the_kinetic_client(gke_env: GkeEnv) -> None:
    """kinetic-gke on its own: store the call by hand with kinetic-protocol, then submit."""
    store = open_store(gke_env.bucket)
    payload = cloudpickle.dumps((operator.mul, (6, 7), {}))
    key = layout.payload_key("mul-by-hand")
    call = CallDescriptor(
        job_id="mul-by-hand",
        func_name="mul",
        payload=ArtifactRef(key=key, sha256=hashlib.sha256(payload).hexdigest(), size=len(payload)),
    )
    record = make_record(
        "mul-by-hand", func_name="mul", bucket_name=gke_env.bucket.removeprefix("gs://")
    )
    store.write(key, payload)
    store.write(layout.call_key("mul-by-hand"), encode_json(call))
    store.write(layout.job_record_key("mul-by-hand"), encode_json(record))

    backend = kinetic_gke.submit_job(record)
    gke_env.sim.wait_for(
        lambda: backend.statuses([record])["mul-by-hand"].status is JobStatus.SUCCEEDED,
        timeout=60,
        message="the hand-made job to succeed",
    )
    key = layout.result_key("mul-by-hand")
    envelope = decode_result(store.read(key), what=key)
    assert isinstance(envelope, Succeeded)
    assert cloudpickle.loads(envelope.value) == 42
    assert kinetic.attach("mul-by-hand", backend="gke").result() == 42


def test_a_whole_run_reads_the_kubeconfig_and_never_writes_it(
    gke_env: GkeEnv, tmp_path: Path
) -> None:
    before = (gke_env.kubeconfig.read_bytes(), gke_env.kubeconfig.stat().st_mtime_ns)
    assert _remote(operator.add).run_async(2, 3).result(timeout=60) == 5
    held = _remote(uf.hold_until).run_async(str(tmp_path / "never"))
    assert [job.job_id for job in kinetic.list_jobs(backend="gke")] == [held.job_id]
    held.cancel(cleanup_timeout=30, cleanup_poll_interval=0.05)
    held.cancel(cleanup_timeout=30, cleanup_poll_interval=0.05)  # idempotent
    assert held.status() is JobStatus.NOT_FOUND
    assert (gke_env.kubeconfig.read_bytes(), gke_env.kubeconfig.stat().st_mtime_ns) == before
