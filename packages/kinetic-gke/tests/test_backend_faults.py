"""GKEBackend on a real control plane: each fault a GKE cluster produces ends in a status that
says what happened, and submission, polling and deletion keep their promises.

The node agent plays kube-scheduler and kubelet (and injects the pod faults a kubelet reports);
API failures, slow answers and request counting go through ``ApiProxy``. Pods run a small
Python command here (no store is needed); the client-level tests (tests/scenarios) run the
real runtime against fake-gcs-server.
"""

import re
import signal
import sys
from datetime import UTC, datetime

import pytest
from gke_test_support import (
    HOLD,
    IMAGE,
    QUICK,
    BackendFactory,
    Cluster,
    RecordFactory,
    alive,
    pid_in,
    state_of,
    wait_for,
    wait_state,
)

from kinetic_gke import GKEBackend
from kinetic_gke.labels import group_selector, job_selector
from kinetic_protocol import BackendError, JobRecord, JobState, JobStatus
from kinetic_testing.controlplane.proxy import ApiFault, ApiProxy
from kinetic_testing.nodeagent import NodeAgent

pytestmark = pytest.mark.realk8s

IGNORES_SIGTERM = (
    sys.executable,
    "-c",
    f"import os, signal, time\nsignal.signal({int(signal.SIGTERM)}, signal.SIG_IGN)\n"
    "print('started', os.getpid(), flush=True)\nwhile True: time.sleep(0.05)",
)
NO_NODE_ACCELERATOR = "gpu-h100"
"""No node of the agent's default pools offers it: kube-scheduler's verdict is Unschedulable."""


def _running(backend: GKEBackend, job: JobRecord) -> int:
    """Wait until the job runs and its process has started; its pid."""
    wait_state(backend, job, JobStatus.RUNNING)
    # A whole line: a log read while the pod writes it may end in "started" without the pid.
    log = wait_for(
        lambda: re.search(r"^started \d+\n", text := backend.logs(job), re.M) and text,
        message=f"{job.job_id} to start",
    )
    return pid_in(log)


def _only_pod(cluster: Cluster, job: JobRecord) -> dict:
    return wait_for(
        lambda: (pods := cluster.pods(job_selector(job.job_id))) and len(pods) == 1 and pods[0],
        message=f"the one pod of {job.job_id}",
    )


# -- the happy path ------------------------------------------------------------------------


def test_a_job_runs_succeeds_and_its_logs_are_readable(
    make_backend: BackendFactory, record: RecordFactory
) -> None:
    backend = make_backend(command=QUICK)
    job = record("quick-1")
    backend.submit(job)
    # Following returns only once the job has ended, not merely once its output stream has.
    assert "".join(backend.follow_logs(job)) == "done\n"
    assert state_of(backend, job) == JobState(status=JobStatus.SUCCEEDED)
    assert backend.logs(job) == "done\n"
    assert backend.logs(job, tail=1) == "done\n"
    assert "".join(backend.follow_logs(job)) == "done\n", "a finished job's output, whole"
    assert backend.list_job_ids() == ["quick-1"]


def test_submitting_the_same_job_twice_creates_one_job(
    make_backend: BackendFactory, record: RecordFactory, cluster: Cluster
) -> None:
    backend = make_backend(command=HOLD)
    job = record("twice-1")
    backend.submit(job)
    backend.submit(job)  # a retried submission: "already exists" is success
    assert [j["metadata"]["name"] for j in cluster.jobs()] == ["twice-1"]


# -- faults ------------------------------------------------------------------------------------


def test_an_image_that_cannot_be_pulled_fails_the_job_naming_the_image(
    make_backend: BackendFactory, record: RecordFactory, cluster: Cluster, agent: NodeAgent
) -> None:
    agent.fail_image_pull(cluster.namespace, selector=job_selector("pull-1"))
    backend = make_backend(command=QUICK)
    job = record("pull-1")
    backend.submit(job)
    state = wait_state(backend, job, JobStatus.FAILED)
    assert state.detail.startswith(("ErrImagePull: ", "ImagePullBackOff: ")), state.detail
    assert IMAGE in state.detail
    assert backend.logs(job) == "", "a pod that never started has no output (and no error)"
    assert list(backend.follow_logs(job)) == []
    stuck = _only_pod(cluster, job)
    assert backend.connection.pod_log(stuck) == "", "a container never started has no output"


def test_an_unschedulable_job_is_pending_with_the_reason_then_fails_past_the_deadline(
    make_backend: BackendFactory, record: RecordFactory, cluster: Cluster
) -> None:
    patient = make_backend(command=QUICK)  # the default deadline: 15 minutes
    impatient = make_backend(command=QUICK, unschedulable_timeout=1.0)
    job = record("gpu-1", accelerator=NO_NODE_ACCELERATOR)
    patient.submit(job)

    pending = wait_for(
        lambda: (s := state_of(patient, job)).detail.startswith("Unschedulable") and s,
        message="the scheduler's verdict to show",
    )
    (pod,) = cluster.pods(job_selector(job.job_id))
    (verdict,) = [c for c in pod["status"]["conditions"] if c["type"] == "PodScheduled"]
    assert verdict["reason"] == "Unschedulable"
    assert pending == JobState(
        status=JobStatus.PENDING, detail=f"Unschedulable: {verdict['message']}"
    )

    failed = wait_state(impatient, job, JobStatus.FAILED)
    assert failed.detail.startswith("Unschedulable for ")
    assert verdict["message"] in failed.detail
    assert state_of(patient, job) == pending, "still only pending for the default deadline"


def test_a_job_that_becomes_schedulable_in_time_runs(
    make_backend: BackendFactory, record: RecordFactory, cluster: Cluster, agent: NodeAgent
) -> None:
    """The autoscaler adds a node after a while: the job was pending, and then it succeeds."""
    agent.lose_node_now("cpu-0")  # the only on-demand CPU node
    wait_for(
        lambda: "cpu-0" not in {n.metadata.name for n in cluster.core.list_node().items},
        message="the CPU node to go",
    )
    backend = make_backend(command=QUICK)
    job = record("scale-1")
    backend.submit(job)
    pending = wait_for(
        lambda: (s := state_of(backend, job)).detail.startswith("Unschedulable") and s,
        message="the pod to be unschedulable first",
    )
    assert pending.status is JobStatus.PENDING
    agent.restore_node("cpu-0")
    assert wait_state(backend, job, JobStatus.SUCCEEDED).status is JobStatus.SUCCEEDED


@pytest.mark.parametrize(
    ("fault", "expected", "exit_code"),
    [
        # The agent's node-pressure eviction is a hard one: SIGKILL, no grace (exit 137).
        ("evict", "evicted: The node was low on resource: memory.", 137),
        ("preempt_spot", "node shutdown or spot preemption", 143),
        # A lost VM reports nothing: pod GC writes phase Failed with DisruptionTarget
        # DeletionByPodGC and no container state, so there is no exit code (the simulator
        # wrote ContainerStatusUnknown / 137, which Kubernetes 1.36 does not).
        ("lose_node", "node lost", None),
        ("oom_kill", "OOMKilled", 137),
    ],
    ids=["eviction", "spot-preemption", "node-loss", "oom-kill"],
)
def test_a_disrupted_running_job_fails_with_the_reason(
    make_backend: BackendFactory,
    record: RecordFactory,
    agent: NodeAgent,
    cluster: Cluster,
    fault: str,
    expected: str,
    exit_code: int | None,
) -> None:
    backend = make_backend(command=HOLD)
    job = record("victim", preemption_retries=0)  # no budget: the disruption ends the job
    backend.submit(job)
    _running(backend, job)
    getattr(agent, fault)(cluster.namespace, selector=job_selector("victim"))
    state = wait_state(backend, job, JobStatus.FAILED)
    if fault == "lose_node" and "pod was deleted" in state.detail:
        # The lost node's pod is force-deleted at once; a poll after that reads the Job alone.
        assert "its node was lost" in state.detail
    else:
        assert state.detail.startswith(expected), state.detail
    assert state.exit_code == exit_code


def test_an_oom_kill_reads_oomkilled_exit_137(
    make_backend: BackendFactory, record: RecordFactory, agent: NodeAgent, cluster: Cluster
) -> None:
    agent.oom_kill(cluster.namespace, selector=job_selector("oom-1"))
    backend = make_backend(command=HOLD)
    job = record("oom-1")
    backend.submit(job)
    state = wait_state(backend, job, JobStatus.FAILED)
    assert state.describe() == "FAILED (OOMKilled, exit 137)"


def _preempt_by_scheduler(cluster: Cluster, agent: NodeAgent, pod: dict) -> None:
    """What kube-scheduler does to a victim: mark it DisruptionTarget, then delete it.

    The condition carries its transition time, as the scheduler's does: kube-controller-manager
    resets a DisruptionTarget whose pod is not deleted within two minutes of that time, and
    one without a time counts as that old at once (under load the reset came before the
    deletion, and the Job failed on the exit code instead)."""
    name = pod["metadata"]["name"]
    condition = {
        "type": "DisruptionTarget",
        "status": "True",
        "reason": "PreemptionByScheduler",
        "message": "default-scheduler: preempting to accommodate a higher priority pod",
        "lastTransitionTime": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }
    cluster.core.patch_namespaced_pod_status(
        name, cluster.namespace, {"status": {"conditions": [condition]}}
    )
    cluster.core.delete_namespaced_pod(name, cluster.namespace)


def _lose_its_node(cluster: Cluster, agent: NodeAgent, pod: dict) -> None:
    agent.lose_node_now(pod["spec"]["nodeName"])


@pytest.mark.parametrize(
    "remove", [_preempt_by_scheduler, _lose_its_node], ids=["scheduler-preemption", "node-loss"]
)
def test_a_job_whose_pod_was_deleted_under_it_fails_saying_so(
    make_backend: BackendFactory,
    record: RecordFactory,
    agent: NodeAgent,
    cluster: Cluster,
    remove: object,
) -> None:
    backend = make_backend(command=HOLD)
    job = record("gone", preemption_retries=0)  # no budget: the deletion ends the job
    backend.submit(job)
    _running(backend, job)
    remove(cluster, agent, _only_pod(cluster, job))  # type: ignore[operator]
    wait_for(lambda: not cluster.pods(job_selector("gone")), message="the pod to go")
    state = wait_state(backend, job, JobStatus.FAILED)
    assert "pod was deleted before it finished" in state.detail


def test_a_pod_whose_kubelet_is_unreachable_stays_running_and_its_logs_say_why(
    make_backend: BackendFactory, record: RecordFactory, agent: NodeAgent, cluster: Cluster
) -> None:
    """Kubernetes 1.36 no longer writes phase Unknown for an unreachable node (the simulator
    did): the pod stays Running, so the job does; only the log proxy's 500 shows the problem."""
    backend = make_backend(command=HOLD)
    job = record("unreachable")
    backend.submit(job)
    _running(backend, job)
    pod = _only_pod(cluster, job)
    agent.set_unreachable(pod["spec"]["nodeName"])
    with pytest.raises(BackendError, match=f"reading the log of pod {pod['metadata']['name']}"):
        backend.logs(job)
    assert state_of(backend, job) == JobState(status=JobStatus.RUNNING)


def test_a_slow_api_server_is_only_slow(
    make_backend: BackendFactory, record: RecordFactory, proxy: ApiProxy
) -> None:
    slow = proxy.inject(ApiFault(delay_s=0.15, times=None))
    backend = make_backend(command=QUICK, via=proxy)
    job = record("slow-1")
    backend.submit(job)
    wait_state(backend, job, JobStatus.SUCCEEDED)
    assert backend.logs(job) == "done\n"
    backend.delete(job, timeout=30, poll_interval=0.05)
    assert state_of(backend, job).status is JobStatus.NOT_FOUND
    assert slow.hits >= 4


def test_a_failing_api_server_is_a_backend_error_naming_the_call(
    make_backend: BackendFactory, record: RecordFactory, proxy: ApiProxy, cluster: Cluster
) -> None:
    failure = proxy.inject(ApiFault(method="POST", path_contains="/jobs", code=500, times=None))
    backend = make_backend(command=QUICK, via=proxy)
    with pytest.raises(BackendError) as caught:
        backend.submit(record("refused-1"))
    message = str(caught.value)
    assert "creating Job refused-1" in message
    assert "500" in message
    assert "injected fault" in message, "the API's own message is kept"
    assert failure.hits == 3, "a 500 is retried twice before it is an error"
    assert cluster.jobs() == []


def test_a_transient_api_failure_is_retried(
    make_backend: BackendFactory, record: RecordFactory, proxy: ApiProxy
) -> None:
    """Every call is safe to repeat (a create that did land answers 409, which is success)."""
    create = proxy.inject(ApiFault(method="POST", path_contains="/jobs", code=503, times=1))
    listing = proxy.inject(ApiFault(method="GET", path_contains="/jobs", code=500, times=2))
    backend = make_backend(command=QUICK, via=proxy)
    job = record("flaky-1")
    backend.submit(job)
    assert wait_state(backend, job, JobStatus.SUCCEEDED).status is JobStatus.SUCCEEDED
    assert (create.hits, listing.hits) == (1, 2)


def test_a_permission_error_says_which_command_to_run(
    make_backend: BackendFactory, record: RecordFactory, proxy: ApiProxy
) -> None:
    proxy.inject(ApiFault(method="GET", path_contains="/jobs", code=403, times=None))
    with pytest.raises(BackendError, match="gcloud auth login"):
        make_backend(via=proxy).statuses([record("denied-1")])


# -- one LIST per poll -------------------------------------------------------------------------


def test_the_status_of_a_whole_group_comes_from_one_list_by_its_label(
    make_backend: BackendFactory, record: RecordFactory, proxy: ApiProxy, cluster: Cluster
) -> None:
    backend = make_backend(command=HOLD, via=proxy)
    children = [
        record(f"sq-0a1b2c3d-{i}", group_id="grp-0a1b2c3d", group_index=i) for i in range(6)
    ]
    for child in children:
        backend.submit(child)
    wait_for(lambda: len(cluster.pods()) == 6, message="six pods")
    proxy.clear()
    states = backend.statuses(children)
    assert set(states) == {child.job_id for child in children}
    requests = list(proxy.requests)
    job_lists = [r for r in requests if r.path.endswith("/jobs")]
    assert len(job_lists) == 1
    assert job_lists[0].method == "GET"
    assert job_lists[0].params.get("labelSelector") == group_selector("grp-0a1b2c3d")
    assert [r for r in requests if "/jobs/" in r.path] == [], "no per-job reads"
    pod_lists = [r for r in requests if r.path.endswith("/pods")]
    assert len(pod_lists) <= 1
    assert len(requests) == len(job_lists) + len(pod_lists)


def test_ready_jobs_need_no_pod_list(
    make_backend: BackendFactory, record: RecordFactory, proxy: ApiProxy, cluster: Cluster
) -> None:
    backend = make_backend(command=HOLD, via=proxy)
    children = [record(f"r-{i}", group_id="grp-00000001", group_index=i) for i in range(3)]
    for child in children:
        backend.submit(child)
    wait_for(
        lambda: all(s.status is JobStatus.RUNNING for s in backend.statuses(children).values()),
        message="every child to run",
    )
    wait_for(
        lambda: all((j.get("status") or {}).get("ready") == 1 for j in cluster.jobs()),
        message="every Job to count its pod ready",
    )
    proxy.clear()
    backend.statuses(children)
    assert [r.path.rsplit("/", 1)[-1] for r in proxy.requests] == ["jobs"]


# -- cancel and cleanup ------------------------------------------------------------------------


def test_delete_stops_the_pod_confirms_it_is_gone_and_can_be_repeated(
    make_backend: BackendFactory, record: RecordFactory, cluster: Cluster
) -> None:
    backend = make_backend(command=HOLD)
    job = record("cancel-1")
    backend.submit(job)
    pid = _running(backend, job)
    assert alive(pid)

    backend.delete(job, timeout=30, poll_interval=0.05)
    # Confirmed: by the time delete returns, nothing of the job is left.
    assert cluster.job("cancel-1") is None
    assert cluster.pods(job_selector("cancel-1")) == []
    assert not alive(pid), "the kubelet stopped the process before confirming the deletion"
    assert state_of(backend, job) == JobState(status=JobStatus.NOT_FOUND)
    assert backend.list_job_ids() == []

    backend.delete(job, timeout=30, poll_interval=0.05)  # idempotent
    backend.delete(record("never-existed"), timeout=30, poll_interval=0.05)


def test_delete_uses_foreground_propagation(
    make_backend: BackendFactory, record: RecordFactory, proxy: ApiProxy
) -> None:
    backend = make_backend(command=QUICK, via=proxy)
    job = record("fg-1")
    backend.submit(job)
    wait_state(backend, job, JobStatus.SUCCEEDED)
    proxy.clear()
    backend.delete(job, timeout=30, poll_interval=0.05)
    deletes = [r for r in proxy.requests if r.method == "DELETE"]
    # The job's object, then the Secret of its captured variables (none here: gone is fine).
    assert [r.path.rsplit("/", 1)[-1] for r in deletes] == ["fg-1", "fg-1-env"]
    assert deletes[0].params.get("propagationPolicy") == "Foreground"


def test_a_deletion_not_confirmed_within_the_timeout_is_an_error_naming_the_job(
    make_backend: BackendFactory, record: RecordFactory, cluster: Cluster
) -> None:
    # A process that ignores SIGTERM keeps its pod for the grace period (the agent caps it
    # at 2 s).
    backend = make_backend(command=IGNORES_SIGTERM)
    job = record("stubborn-1")
    backend.submit(job)
    _running(backend, job)
    with pytest.raises(BackendError, match=r"stubborn-1.*still present 0\.3s after"):
        backend.delete(job, timeout=0.3, poll_interval=0.05)
    backend.delete(job, timeout=30, poll_interval=0.05)  # given time, it is confirmed
    assert cluster.job("stubborn-1") is None
