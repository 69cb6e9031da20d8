"""Array batches on ``gke``: a whole batch is one Indexed Job, on the real control plane.

The job controller, not a client, keeps ``max_concurrent`` running, retries a failed index in
place and applies fail-fast; each index is still a Kinetic job of its own (id, result,
``attach``). So the batch survives its submitter without any ``resume``: a process killed right
after ``run_async_map`` returned leaves a batch another process collects whole, retries
included.
"""

import json
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import batch_userfuncs as uf
import durability_userfuncs as duf
import pytest
import retry_userfuncs as ruf
from batch_support import private_project, start_script
from kubernetes import client
from scenario_support import ScenarioBackend, pid_gone, run_script, wait_until

import kinetic
from kinetic import BatchError, FailureCause, JobStatus
from kinetic_protocol import layout
from kinetic_testing.controlplane.cluster import ControlPlane

pytestmark = pytest.mark.backends("gke")


class Jobs:
    """The namespace's Jobs, read with the admin client."""

    def __init__(self, api: Any, namespace: str) -> None:
        self.batch = client.BatchV1Api(api)
        self.core = client.CoreV1Api(api)
        self.namespace = namespace

    def all(self) -> list[Any]:
        return list(self.batch.list_namespaced_job(self.namespace).items)

    def pods(self) -> list[Any]:
        return list(self.core.list_namespaced_pod(self.namespace).items)


@pytest.fixture
def jobs(real_k8s: ControlPlane, k8s_namespace: str) -> Iterator[Jobs]:
    api = real_k8s.api_client()
    yield Jobs(api, k8s_namespace)
    api.close()


def _published_pid(path: Path) -> int:
    """The pid a job wrote to ``path`` (``batch_userfuncs.step(create=...)``)."""
    return int(wait_until(lambda: path.exists() and path.read_text(), f"a pid in {path.name}"))


def _runs(tmp_path: Path) -> Path:
    runs = tmp_path / "runs"
    runs.mkdir()
    return runs


def test_a_batch_is_one_indexed_job_and_each_index_a_job(
    kinetic_backend: ScenarioBackend, jobs: Jobs, tmp_path: Path
) -> None:
    traced = kinetic_backend.decorate()(duf.traced)
    runs = _runs(tmp_path)
    batch = traced.run_async_map(
        [{"index": i, "runs": str(runs)} for i in range(3)], max_concurrent=2, retries=1
    )
    [job] = jobs.all()
    spec = job.spec
    assert (spec.completion_mode, spec.completions, spec.parallelism) == ("Indexed", 3, 2)
    assert spec.backoff_limit_per_index == 1  # the batch's retries
    store = kinetic_backend.store()
    assert store.list(layout.children_prefix(batch.group_id)) == []  # no per-child records
    assert store.list(layout.leases_prefix(batch.group_id)) == []  # and no submitter lease
    assert batch.results(timeout=120, cleanup=False) == [0, 1, 4]
    for index, child in enumerate(batch.jobs):
        assert child is not None
        assert child.job_id == f"{job.metadata.name}-{index}"
        assert (runs / str(index)).read_text() == f"{child.job_id}\n"  # its own id, in its pod
        again = kinetic.attach(child.job_id, backend="gke")
        assert again.status() is JobStatus.SUCCEEDED
        assert again.result() == index * index


def test_a_failed_index_runs_again_as_its_next_attempt(
    kinetic_backend: ScenarioBackend, jobs: Jobs, tmp_path: Path
) -> None:
    """The job controller reruns the index; the rerun is attempt 1 with the id a per-child
    retry has (``-r1``): its own result, its own record, its own line in the timeline."""
    traced = kinetic_backend.decorate()(duf.traced)
    runs = _runs(tmp_path)
    inputs = [{"index": i, "runs": str(runs), "fail_first": i == 1} for i in range(3)]
    batch = traced.run_async_map(inputs, retries=1)
    assert batch.results(timeout=120, cleanup=False) == [0, 1, 4]
    [job] = jobs.all()
    first_id = f"{job.metadata.name}-1"
    assert (runs / "1").read_text() == f"{first_id}\n{first_id}-r1\n"
    assert [child.attempt for child in batch.jobs if child is not None] == [0, 1, 0]
    retried = batch.jobs[1]
    assert retried is not None and retried.job_id == f"{first_id}-r1"
    # The retry wrote its own child record (attempt 0 has none: it exists by construction).
    store = kinetic_backend.store()
    assert store.list(layout.children_prefix(batch.group_id)) == [
        layout.child_key(batch.group_id, 1, 1)
    ]
    first = kinetic.attach(first_id, backend="gke")
    assert (first.attempt, first.status()) == (0, JobStatus.FAILED)
    with pytest.raises(duf.DurabilityUserError):
        first.result(cleanup=False)
    attached = kinetic.attach_batch(batch.group_id, backend="gke")
    assert [child.job_id for child in attached.jobs if child is not None] == [
        child.job_id for child in batch.jobs if child is not None
    ]
    lines = [(a.index, a.attempt, a.job_id) for a in batch.timeline().attempts]
    assert sorted(lines) == [
        (0, 0, f"{job.metadata.name}-0"),
        (1, 0, first_id),
        (1, 1, f"{first_id}-r1"),
        (2, 0, f"{job.metadata.name}-2"),
    ]


def test_retry_on_timeout_runs_a_timed_out_index_again_and_retry_on_oom_does_not(
    kinetic_backend: ScenarioBackend, tmp_path: Path
) -> None:
    """``timeout=`` is each pod's deadline: the kubelet stops a pod past it with SIGTERM and
    fails it ``DeadlineExceeded``. The Job's retry rules take that for a timeout (exit 143),
    never for an out-of-memory kill (137), and the cause reads ``timeout`` either way."""
    remote = kinetic_backend.decorate(timeout=10)(ruf.hold_on_the_first_attempt)
    gate = str(tmp_path / "never-opened")
    on_timeout = remote.run_async_map([gate], retries=1, retry_on=["timeout"])
    on_oom = remote.run_async_map([gate], retries=1, retry_on=["oom"])

    assert on_timeout.results(timeout=180, cleanup=False) == ["retried"]
    [retried] = on_timeout.jobs
    assert retried is not None and retried.attempt == 1
    first = kinetic.attach(retried.job_id.removesuffix("-r1"), backend="gke").failure()
    assert first is not None and first.cause is FailureCause.TIMEOUT

    [outcome] = on_oom.results(timeout=180, return_exceptions=True, cleanup=False)
    assert isinstance(outcome, kinetic.JobFailedError)
    assert [child.attempt for child in on_oom.jobs if child is not None] == [0]
    assert on_oom.cause_counts() == {"timeout": 1}


def test_without_retries_a_failed_index_is_final(
    kinetic_backend: ScenarioBackend, tmp_path: Path
) -> None:
    traced = kinetic_backend.decorate()(duf.traced)
    runs = _runs(tmp_path)
    inputs = [{"index": i, "runs": str(runs), "fail_first": i == 0} for i in range(2)]
    batch = traced.run_async_map(inputs)
    with pytest.raises(BatchError) as caught:
        batch.results(timeout=120)
    assert caught.value.partial_results == [None, 1]
    assert (runs / "0").read_text().count("\n") == 1
    [failed] = batch.failures()
    failure = failed.failure()
    assert failure is not None and failure.cause is FailureCause.USER


def test_fail_fast_with_cancel_stops_every_index_on_the_server(
    kinetic_backend: ScenarioBackend, jobs: Jobs, tmp_path: Path
) -> None:
    step = kinetic_backend.decorate()(uf.step)
    never = tmp_path / "never"
    started = tmp_path / "started"
    batch = step.run_async_map(
        [
            {"value": "slow", "create": str(started), "wait_for": str(never)},
            {"value": "bad", "wait_for": str(started), "fail": "boom"},
        ],
        max_concurrent=None,
        fail_fast=True,
        cancel_running_on_fail=True,
    )
    outcome = batch.results(timeout=120, return_exceptions=True)
    assert isinstance(outcome[1], uf.BatchUserError)
    assert isinstance(outcome[0], Exception)
    slow = batch.jobs[0]
    assert slow is not None
    failure = slow.failure()
    assert failure is not None and failure.cause is FailureCause.CANCELLED
    [job] = jobs.all()  # the job controller failed it (and stops its pods) by itself
    assert any(
        c.type in ("FailureTarget", "Failed") and c.reason == "MaxFailedIndexesExceeded"
        for c in job.status.conditions
    )


def test_fail_fast_that_lets_running_children_finish_is_one_job_per_input(
    kinetic_backend: ScenarioBackend, jobs: Jobs
) -> None:
    """maxFailedIndexes stops every index: a Job cannot leave running children be."""
    square = kinetic_backend.decorate()(uf.square)
    batch = square.run_async_map([1, 2], fail_fast=True)
    assert batch.results(timeout=120, cleanup=False) == [1, 4]
    names = sorted(job.metadata.name for job in jobs.all())
    assert names == sorted(job.job_id for job in batch.jobs if job is not None)
    assert all(job.spec.completion_mode != "Indexed" for job in jobs.all())


def test_cancel_from_any_handle_deletes_the_job_and_stops_every_running_index(
    kinetic_backend: ScenarioBackend, jobs: Jobs, tmp_path: Path
) -> None:
    step = kinetic_backend.decorate()(uf.step)
    never = str(tmp_path / "never")
    markers = [tmp_path / "started-0", tmp_path / "started-1"]
    batch = step.run_async_map(
        [{"value": i, "create": str(markers[i]), "wait_for": never} for i in range(2)]
        + [{"value": 2}],
        max_concurrent=2,
    )
    pids = [_published_pid(marker) for marker in markers]
    kinetic.attach_batch(batch.group_id, backend="gke").cancel()  # from any handle
    assert all(pid_gone(pid) for pid in pids), "a cancelled child's process is still alive"
    assert jobs.all() == []
    assert [status for _, status in batch.statuses()] == [JobStatus.NOT_FOUND] * 3
    outcomes = batch.results(return_exceptions=True, timeout=60)
    assert all(isinstance(outcome, Exception) for outcome in outcomes), outcomes
    assert (
        kinetic.attach_batch(batch.group_id, backend="gke").resume().endswith("nothing to resume.")
    )


def test_cancelling_one_child_without_retries_stops_its_index_for_good(
    kinetic_backend: ScenarioBackend, jobs: Jobs, tmp_path: Path
) -> None:
    """Its pod is deleted; without retries the Job fails that index (any non-zero exit is
    final) and runs the others on."""
    step = kinetic_backend.decorate()(uf.step)
    started = tmp_path / "started"
    batch = step.run_async_map(
        [
            {"value": 0, "create": str(started), "wait_for": str(tmp_path / "never")},
            {"value": 1, "wait_for": str(started)},
        ],
    )
    pid = _published_pid(started)
    child = batch.jobs[0]
    assert child is not None
    child.cancel()
    assert pid_gone(pid), "the cancelled child's process is still alive"
    outcomes = batch.results(return_exceptions=True, timeout=120)
    assert isinstance(outcomes[0], Exception) and outcomes[1] == 1
    assert child.status() is JobStatus.NOT_FOUND
    [job] = jobs.all()
    assert job.status.failed_indexes == "0"


def test_inputs_the_cluster_refuses_to_create_say_why_then_fail_as_unschedulable(
    kinetic_backend: ScenarioBackend, jobs: Jobs, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A missing service account: the job controller can create no pod of the Job, and each
    input reads the refusal (not "waiting for its pod") until the deadline fails it."""
    monkeypatch.setenv("KINETIC_SERVICE_ACCOUNT", "does-not-exist")
    monkeypatch.setenv("KINETIC_UNSCHEDULABLE_TIMEOUT", "3")
    square = kinetic_backend.decorate()(uf.square)
    batch = square.run_async_map([1, 2])
    child = batch.jobs[1]
    assert child is not None
    refused = wait_until(
        lambda: (state := child.status_detail()).detail.startswith("FailedCreate: ") and state,
        "the refusal to show in the input's status",
    )
    assert 'serviceaccount "does-not-exist" not found' in refused.detail
    outcomes = batch.results(return_exceptions=True, timeout=60, cleanup=False)
    assert all(isinstance(outcome, Exception) for outcome in outcomes)
    assert batch.cause_counts() == {"unschedulable": 2}
    failure = child.failure()
    assert failure is not None and 'serviceaccount "does-not-exist"' in failure.reason
    assert jobs.pods() == []


SUBMIT_AND_DIE = """
    import os, signal, sys
    sys.path.insert(0, sys.argv[2])
    import kinetic
    import durability_userfuncs as uf

    traced = kinetic.run(accelerator="cpu", backend="gke")(uf.traced)
    batch = traced.run_async_map(
        [{"index": i, "runs": sys.argv[1], "fail_first": i == 2, "wait_for": sys.argv[3]}
         for i in range(4)],
        retries=1,
    )
    print(batch.group_id, flush=True)
    os.kill(os.getpid(), signal.SIGKILL)
"""

COLLECT = """
    import json, sys
    import kinetic

    batch = kinetic.attach_batch(sys.argv[1], backend="gke")
    print(json.dumps(batch.results(timeout=120, cleanup=False)))
"""


def test_a_second_process_collects_every_result_of_a_killed_submitter_without_resume(
    kinetic_backend: ScenarioBackend, tmp_path: Path
) -> None:
    """Input 2 fails its first run only after the submitter is dead (every input waits for a
    gate opened after the kill): its retry is the cluster's, and the collector never resumes."""
    runs = _runs(tmp_path)
    gate = tmp_path / "gate"
    project = private_project(tmp_path, "durability_userfuncs")
    process = start_script(tmp_path, SUBMIT_AND_DIE, str(runs), str(project), str(gate))
    out, err = process.communicate(timeout=120)
    assert process.returncode == -signal.SIGKILL, err
    group_id = out.split()[0]
    gate.touch()
    done = run_script(COLLECT, tmp_path / "collector", args=(group_id,), timeout=180)
    assert json.loads(done.stdout.splitlines()[-1]) == [0, 1, 4, 9]
    assert (runs / "2").read_text().count("\n") == 2  # the retry ran after the kill
    assert "resum" not in done.stderr.lower()


@pytest.fixture
def three_per_job(monkeypatch: pytest.MonkeyPatch) -> None:
    """The gke backend as if one Indexed Job held 3 inputs (the API's limit is 100,000)."""
    import msgspec

    from kinetic_gke import GKEBackend

    limited = msgspec.structs.replace(GKEBackend.capabilities, array_batches=3)
    monkeypatch.setattr(GKEBackend, "capabilities", limited)


@pytest.mark.usefixtures("three_per_job")
def test_a_batch_larger_than_one_job_holds_is_split_into_jobs_each_input_a_job(
    kinetic_backend: ScenarioBackend, jobs: Jobs, tmp_path: Path
) -> None:
    """7 inputs, 3 a Job: Jobs of 3, 3 and 1, input ``i`` index ``i % 3`` of Job ``i // 3``,
    every input still its own job (id, result, retry, attach), and a cancel or cleanup over
    all of them."""
    traced = kinetic_backend.decorate()(duf.traced)
    runs = _runs(tmp_path)
    inputs = [{"index": i, "runs": str(runs), "fail_first": i == 4} for i in range(7)]
    batch = traced.run_async_map(inputs, retries=1, max_concurrent=None)
    prefix = batch.jobs[0].job_id.rsplit("-", 1)[0]  # type: ignore[union-attr]
    by_name = {job.metadata.name: job.spec for job in jobs.all()}
    assert {name: spec.completions for name, spec in by_name.items()} == {
        prefix: 3,
        f"{prefix}-p1": 3,
        f"{prefix}-p2": 1,
    }
    assert all(spec.completion_mode == "Indexed" for spec in by_name.values())
    assert batch.results(timeout=180, cleanup=False) == [i * i for i in range(7)]
    for index in range(7):
        own = f"{prefix}-{index}"
        expected = f"{own}\n{own}-r1\n" if index == 4 else f"{own}\n"
        assert (runs / str(index)).read_text() == expected  # its own id, in its pod
    retried = batch.jobs[4]
    assert retried is not None and (retried.job_id, retried.attempt) == (f"{prefix}-4-r1", 1)
    assert [status for _, status in batch.statuses()] == [JobStatus.SUCCEEDED] * 7
    again = kinetic.attach(f"{prefix}-6", backend="gke")  # index 0 of the third Job
    assert (again.status(), again.result(cleanup=False)) == (JobStatus.SUCCEEDED, 36)
    listed = {job.job_id for job in kinetic.list_jobs(backend="gke")}
    assert {f"{prefix}-{i}" for i in range(7) if i != 4} | {f"{prefix}-4-r1"} <= listed
    attached = kinetic.attach_batch(batch.group_id, backend="gke")
    assert attached.results(timeout=60, cleanup=False) == [i * i for i in range(7)]
    fifth = attached.jobs[5]
    assert fifth is not None
    fifth.cleanup()  # index 2 of the second Job: its pods go, index 2 of the first stays
    assert {
        pod.metadata.labels["batch.kubernetes.io/job-name"]
        for pod in jobs.pods()
        if pod.metadata.labels["batch.kubernetes.io/job-completion-index"] == "2"
    } == {prefix}
    assert [status for _, status in attached.statuses()][4:] == [
        JobStatus.SUCCEEDED,
        JobStatus.NOT_FOUND,
        JobStatus.SUCCEEDED,
    ]
    attached.cancel()
    assert jobs.all() == []
    assert jobs.pods() == []
