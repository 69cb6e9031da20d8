"""GKEBackend against the Kubernetes API simulator: each fault a GKE cluster produces ends in a
status that says what happened, and submission, polling and deletion keep their promises.

Pods run a small Python command here (no store is needed); the client-level tests run the real
runtime against fake-gcs-server.
"""

import signal
import sys

import pytest
from gke_test_support import HOLD, IMAGE, QUICK, BackendFactory, RecordFactory

from kinetic_gke import GKEBackend
from kinetic_gke._k8s import KubeApi
from kinetic_gke.labels import group_selector, job_selector
from kinetic_protocol import BackendError, BackendSettings, JobRecord, JobState, JobStatus
from kinetic_testing.k8s import (
    ApiFailure,
    Eviction,
    ImagePullFailure,
    KubernetesSimulator,
    NodeLoss,
    OOMKill,
    PodFault,
    Preemption,
    SlowApi,
    Unschedulable,
)

pytestmark = pytest.mark.k8s

IGNORES_SIGTERM = (
    sys.executable,
    "-c",
    f"import signal, time\nsignal.signal({int(signal.SIGTERM)}, signal.SIG_IGN)\n"
    "print('started', flush=True)\nwhile True: time.sleep(0.05)",
)


def _state(backend: GKEBackend, job: JobRecord) -> JobState:
    return backend.statuses([job])[job.job_id]


def _wait_state(
    sim: KubernetesSimulator, backend: GKEBackend, job: JobRecord, *wanted: JobStatus
) -> JobState:
    """Poll until the job's status is one of ``wanted``; return that state."""
    return sim.wait_for(
        lambda: (s := _state(backend, job)).status in wanted and s,
        message=f"{job.job_id} to become {'/'.join(w.value for w in wanted)}",
    )


def _running(sim: KubernetesSimulator, backend: GKEBackend, job: JobRecord) -> None:
    _wait_state(sim, backend, job, JobStatus.RUNNING)
    sim.wait_for(lambda: "started" in backend.logs(job), message=f"{job.job_id} to start")


# -- the happy path ------------------------------------------------------------------------


def test_a_job_runs_succeeds_and_its_logs_are_readable(
    sim: KubernetesSimulator, make_backend: BackendFactory, record: RecordFactory
) -> None:
    backend = make_backend(command=QUICK)
    job = record("quick-1")
    backend.submit(job)
    # Following returns only once the job has ended, not merely once its output stream has.
    assert "".join(backend.follow_logs(job)) == "done\n"
    assert _state(backend, job) == JobState(status=JobStatus.SUCCEEDED)
    assert backend.logs(job) == "done\n"
    assert backend.logs(job, tail=1) == "done\n"
    assert "".join(backend.follow_logs(job)) == "done\n", "a finished job's output, whole"
    assert backend.list_job_ids() == ["quick-1"]


def test_submitting_the_same_job_twice_creates_one_job(
    sim: KubernetesSimulator, make_backend: BackendFactory, record: RecordFactory
) -> None:
    backend = make_backend(command=HOLD)
    job = record("twice-1")
    backend.submit(job)
    backend.submit(job)  # a retried submission: "already exists" is success
    assert [j["metadata"]["name"] for j in sim.jobs()] == ["twice-1"]


# -- faults ------------------------------------------------------------------------------------


def test_an_image_that_cannot_be_pulled_fails_the_job_naming_the_image(
    sim: KubernetesSimulator, make_backend: BackendFactory, record: RecordFactory
) -> None:
    sim.inject(ImagePullFailure(job_name="pull-1"))
    backend = make_backend(command=QUICK)
    job = record("pull-1")
    backend.submit(job)
    state = _wait_state(sim, backend, job, JobStatus.FAILED)
    assert state.detail.startswith(("ErrImagePull: ", "ImagePullBackOff: ")), state.detail
    assert IMAGE in state.detail
    assert backend.logs(job) == "", "a pod that never started has no output (and no error)"
    assert list(backend.follow_logs(job)) == []
    (stuck,) = sim.pods(selector=job_selector("pull-1"))
    assert backend.api.pod_log(stuck["metadata"]["name"]) == "", "the API's 400 means no output"


def test_an_unschedulable_job_is_pending_with_the_reason_then_fails_past_the_deadline(
    sim: KubernetesSimulator, make_backend: BackendFactory, record: RecordFactory
) -> None:
    fault = sim.inject(Unschedulable(job_name="gpu-1"))
    patient = make_backend(command=QUICK)  # the default deadline: 15 minutes
    impatient = make_backend(command=QUICK, unschedulable_timeout=1.0)
    job = record("gpu-1", accelerator="gpu-l4")
    patient.submit(job)

    pending = sim.wait_for(
        lambda: (s := _state(patient, job)).detail.startswith("Unschedulable") and s,
        message="the scheduler's verdict to show",
    )
    assert pending == JobState(status=JobStatus.PENDING, detail=f"Unschedulable: {fault.message}")

    failed = _wait_state(sim, impatient, job, JobStatus.FAILED)
    assert failed.detail.startswith("Unschedulable for ")
    assert fault.message in failed.detail
    assert _state(patient, job) == pending, "still only pending for the default deadline"


def test_a_job_that_becomes_schedulable_in_time_runs(
    sim: KubernetesSimulator, make_backend: BackendFactory, record: RecordFactory
) -> None:
    """The autoscaler adds a node after a while: the job was pending, and then it succeeds."""
    fault = sim.inject(Unschedulable(job_name="scale-1", duration=0.3))
    backend = make_backend(command=QUICK)
    job = record("scale-1")
    backend.submit(job)
    sim.wait_for(lambda: fault.hits, message="the pod to be unschedulable first")
    assert _wait_state(sim, backend, job, JobStatus.SUCCEEDED).status is JobStatus.SUCCEEDED


@pytest.mark.parametrize(
    ("fault", "expected", "exit_code"),
    [
        (Eviction(job_name="victim"), "evicted: The node was low on resource: memory.", 143),
        (Preemption(job_name="victim"), "node shutdown or spot preemption", 143),
        (NodeLoss(job_name="victim"), "node lost; ContainerStatusUnknown", 137),
        (OOMKill(job_name="victim"), "OOMKilled", 137),
    ],
    ids=["eviction", "spot-preemption", "node-loss", "oom-kill"],
)
def test_a_disrupted_running_job_fails_with_the_reason(
    sim: KubernetesSimulator,
    make_backend: BackendFactory,
    record: RecordFactory,
    fault: PodFault,
    expected: str,
    exit_code: int,
) -> None:
    backend = make_backend(command=HOLD)
    job = record("victim")
    backend.submit(job)
    _running(sim, backend, job)
    sim.inject(fault)
    state = _wait_state(sim, backend, job, JobStatus.FAILED)
    assert state.detail.startswith(expected), state.detail
    assert state.exit_code == exit_code


def test_an_oom_kill_reads_oomkilled_exit_137(
    sim: KubernetesSimulator, make_backend: BackendFactory, record: RecordFactory
) -> None:
    sim.inject(OOMKill(job_name="oom-1"))
    backend = make_backend(command=HOLD)
    job = record("oom-1")
    backend.submit(job)
    state = _wait_state(sim, backend, job, JobStatus.FAILED)
    assert state.describe() == "FAILED (OOMKilled, exit 137)"


@pytest.mark.parametrize(
    "fault",
    [Preemption(job_name="gone", by="scheduler"), NodeLoss(job_name="gone", delete_pod=True)],
    ids=["scheduler-preemption", "node-loss-pod-deleted"],
)
def test_a_job_whose_pod_was_deleted_under_it_fails_saying_so(
    sim: KubernetesSimulator, make_backend: BackendFactory, record: RecordFactory, fault: PodFault
) -> None:
    backend = make_backend(command=HOLD)
    job = record("gone")
    backend.submit(job)
    _running(sim, backend, job)
    sim.inject(fault)
    sim.wait_for(lambda: not sim.pods(selector=job_selector("gone")), message="the pod to go")
    state = _wait_state(sim, backend, job, JobStatus.FAILED)
    assert "pod was deleted before it finished" in state.detail


def test_a_pod_on_an_unreachable_node_stays_running_and_says_so(
    sim: KubernetesSimulator, make_backend: BackendFactory, record: RecordFactory
) -> None:
    backend = make_backend(command=HOLD)
    job = record("unreachable")
    backend.submit(job)
    _running(sim, backend, job)
    sim.inject(NodeLoss(job_name="unreachable", phase="Unknown"))
    sim.wait_for(
        lambda: _state(backend, job).detail.startswith("pod state unknown"),
        message="the node loss to show",
    )
    assert _state(backend, job).status is JobStatus.RUNNING


def test_a_slow_api_server_is_only_slow(
    sim: KubernetesSimulator, make_backend: BackendFactory, record: RecordFactory
) -> None:
    slow = sim.inject(SlowApi(delay_ms=150))
    backend = make_backend(command=QUICK)
    job = record("slow-1")
    backend.submit(job)
    _wait_state(sim, backend, job, JobStatus.SUCCEEDED)
    assert backend.logs(job) == "done\n"
    backend.delete(job, timeout=30, poll_interval=0.05)
    assert _state(backend, job).status is JobStatus.NOT_FOUND
    assert slow.hits >= 4


def test_a_failing_api_server_is_a_backend_error_naming_the_call(
    sim: KubernetesSimulator, make_backend: BackendFactory, record: RecordFactory
) -> None:
    failure = sim.inject(ApiFailure(method="POST", path_contains="/jobs", code=500, times=None))
    backend = make_backend(command=QUICK)
    with pytest.raises(BackendError) as caught:
        backend.submit(record("refused-1"))
    message = str(caught.value)
    assert "creating Job refused-1" in message
    assert "500" in message
    assert failure.message in message
    assert sim.jobs() == []


def test_a_transient_api_failure_is_retried(
    sim: KubernetesSimulator, make_backend: BackendFactory, record: RecordFactory
) -> None:
    """Every call is safe to repeat (a create that did land answers 409, which is success)."""
    create = sim.inject(ApiFailure(method="POST", path_contains="/jobs", code=503, times=1))
    listing = sim.inject(ApiFailure(method="GET", path_contains="/jobs", code=500, times=2))
    backend = make_backend(command=QUICK)
    job = record("flaky-1")
    backend.submit(job)
    assert _wait_state(sim, backend, job, JobStatus.SUCCEEDED).status is JobStatus.SUCCEEDED
    assert (create.hits, listing.hits) == (1, 2)


def test_a_permission_error_says_which_command_to_run(
    sim: KubernetesSimulator, make_backend: BackendFactory, record: RecordFactory
) -> None:
    sim.inject(ApiFailure(method="GET", path_contains="/jobs", code=403, times=None))
    with pytest.raises(BackendError, match="gcloud auth login"):
        make_backend().statuses([record("denied-1")])


# -- one LIST per poll -------------------------------------------------------------------------


def test_the_status_of_a_whole_group_comes_from_one_list_by_its_label(
    sim: KubernetesSimulator, make_backend: BackendFactory, record: RecordFactory
) -> None:
    backend = make_backend(command=HOLD)
    children = [
        record(f"sq-0a1b2c3d-{i}", group_id="grp-0a1b2c3d", group_index=i) for i in range(6)
    ]
    for child in children:
        backend.submit(child)
    sim.wait_for(lambda: len(sim.pods()) == 6, message="six pods")
    sim.clear_requests()
    states = backend.statuses(children)
    assert set(states) == {child.job_id for child in children}
    job_lists = [r for r in sim.requests if r.path.endswith("/jobs")]
    assert len(job_lists) == 1
    assert job_lists[0].method == "GET"
    assert job_lists[0].query.get("labelSelector") == group_selector("grp-0a1b2c3d")
    assert [r for r in sim.requests if "/jobs/" in r.path] == [], "no per-job reads"
    pod_lists = [r for r in sim.requests if r.path.endswith("/pods")]
    assert len(pod_lists) <= 1
    assert len(sim.requests) == len(job_lists) + len(pod_lists)


def test_ready_jobs_need_no_pod_list(
    sim: KubernetesSimulator, make_backend: BackendFactory, record: RecordFactory
) -> None:
    backend = make_backend(command=HOLD)
    children = [record(f"r-{i}", group_id="grp-00000001", group_index=i) for i in range(3)]
    for child in children:
        backend.submit(child)
    sim.wait_for(
        lambda: all(s.status is JobStatus.RUNNING for s in backend.statuses(children).values()),
        message="every child to run",
    )
    sim.wait_for(
        lambda: all((j.get("status") or {}).get("ready") == 1 for j in sim.jobs()),
        message="every Job to count its pod ready",
    )
    sim.clear_requests()
    backend.statuses(children)
    assert [r.path.rsplit("/", 1)[-1] for r in sim.requests] == ["jobs"]


# -- cancel and cleanup ------------------------------------------------------------------------


def test_delete_stops_the_pod_confirms_it_is_gone_and_can_be_repeated(
    sim: KubernetesSimulator, make_backend: BackendFactory, record: RecordFactory
) -> None:
    backend = make_backend(command=HOLD)
    job = record("cancel-1")
    backend.submit(job)
    _running(sim, backend, job)
    assert sim.running_pids()

    backend.delete(job, timeout=30, poll_interval=0.05)
    # Confirmed: by the time delete returns, nothing of the job is left.
    assert sim.job("cancel-1") is None
    assert sim.pods(selector=job_selector("cancel-1")) == []
    assert sim.running_pids() == []
    assert _state(backend, job) == JobState(status=JobStatus.NOT_FOUND)
    assert backend.list_job_ids() == []

    backend.delete(job, timeout=30, poll_interval=0.05)  # idempotent
    backend.delete(record("never-existed"), timeout=30, poll_interval=0.05)


def test_delete_uses_foreground_propagation(
    sim: KubernetesSimulator, make_backend: BackendFactory, record: RecordFactory
) -> None:
    backend = make_backend(command=QUICK)
    job = record("fg-1")
    backend.submit(job)
    _wait_state(sim, backend, job, JobStatus.SUCCEEDED)
    sim.clear_requests()
    backend.delete(job, timeout=30, poll_interval=0.05)
    deletes = [r for r in sim.requests if r.method == "DELETE"]
    assert [r.path.rsplit("/", 1)[-1] for r in deletes] == ["fg-1"]
    assert deletes[0].query.get("propagationPolicy") == "Foreground"


def test_a_deletion_not_confirmed_within_the_timeout_is_an_error_naming_the_job(
    record: RecordFactory,
) -> None:
    # A process that ignores SIGTERM keeps its pod for the grace period (capped at 1 s here).
    with KubernetesSimulator(grace_period_cap=1.0) as slow_sim:
        backend = GKEBackend(
            BackendSettings(project="p", store_uri="gs://b"),
            api=KubeApi(slow_sim.api_client(), "default"),
            command=IGNORES_SIGTERM,
        )
        job = record("stubborn-1")
        backend.submit(job)
        _running(slow_sim, backend, job)
        with pytest.raises(BackendError, match=r"stubborn-1.*still present 0\.3s after"):
            backend.delete(job, timeout=0.3, poll_interval=0.05)
        backend.delete(job, timeout=30, poll_interval=0.05)  # given time, it is confirmed
        assert slow_sim.job("stubborn-1") is None
        assert slow_sim.validation_errors == []
        assert slow_sim.errors == []
