"""The real job controller, garbage collector and ttl-after-finished controller acting on the
objects the gke backend creates (not on hand-written ones)."""

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from gke_test_support import make_record

from kinetic_gke import GKEBackend
from kinetic_gke.k8s import ClusterConnection, JobWorkload
from kinetic_gke.k8s.signing import namespace_keyring
from kinetic_gke.labels import job_selector
from kinetic_gke.manifests import job_manifest
from kinetic_protocol import BackendSettings, JobStatus
from kinetic_testing.controlplane.cluster import ControlPlane
from kinetic_testing.nodeagent import NodeAgent, base_host_env

QUICK = (sys.executable, "-c", "print('done', flush=True)")
STUBBORN = (
    sys.executable,
    "-c",
    "import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
    "print('started', flush=True)\nwhile True: time.sleep(0.05)",
)


@pytest.fixture
def connection(real_k8s: ControlPlane, k8s_namespace: str) -> Iterator[ClusterConnection]:
    api = real_k8s.api_client()
    yield ClusterConnection(api, k8s_namespace)
    api.close()


@pytest.fixture
def agent(real_k8s: ControlPlane, tmp_path: Path) -> Iterator[NodeAgent]:
    with NodeAgent(
        real_k8s.api_client, workdir=tmp_path / "nodes", host_env=base_host_env(os.environ)
    ) as node_agent:
        yield node_agent
        errors = list(node_agent.errors)
    assert errors == []


def _backend(connection: ClusterConnection, command: tuple[str, ...]) -> GKEBackend:
    settings = BackendSettings(project="p", namespace=connection.namespace, store_uri="gs://b")
    return GKEBackend(settings, connection=connection, command=command)


def _wait(check, what: str, timeout: float = 30.0):  # type: ignore[no-untyped-def]
    import time

    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


@pytest.mark.usefixtures("agent")
def test_the_job_controller_makes_and_tracks_the_pod_of_our_job(
    connection: ClusterConnection,
) -> None:
    backend = _backend(connection, QUICK)
    record = make_record("ctrl-job", namespace=connection.namespace)
    backend.submit(record)
    (pod,) = _wait(lambda: connection.list_pods(job_selector(record.job_id)), "the pod")
    owner = pod["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["name"], owner["controller"]) == ("Job", "ctrl-job", True)
    assert pod["metadata"]["labels"]["kinetic.dev/job-id"] == "ctrl-job"
    _wait(lambda: backend.statuses([record])["ctrl-job"].status is JobStatus.SUCCEEDED, "success")
    # The controller's second write: counted, Complete, and the tracking finalizer released.
    job = _wait(
        lambda: (
            (found := backend.workload.get(connection, "ctrl-job"))
            and found["status"].get("succeeded") == 1
            and found
        ),
        "the Job to count its pod",
    )
    assert any(c["type"] == "Complete" for c in job["status"].get("conditions", []))


@pytest.mark.usefixtures("agent")
def test_foreground_deletion_waits_for_the_pod_and_removes_both(
    connection: ClusterConnection,
) -> None:
    backend = _backend(connection, STUBBORN)
    record = make_record("ctrl-delete", namespace=connection.namespace)
    backend.submit(record)
    _wait(lambda: backend.statuses([record])["ctrl-delete"].status is JobStatus.RUNNING, "run")
    backend.workload.delete(connection, "ctrl-delete")
    deleting = backend.workload.get(connection, "ctrl-delete")
    assert deleting is not None, "foreground: the Job stays until its pod is gone"
    assert "foregroundDeletion" in deleting["metadata"]["finalizers"]
    backend.delete(record, timeout=30, poll_interval=0.05)
    assert backend.workload.get(connection, "ctrl-delete") is None
    assert connection.list_pods(job_selector("ctrl-delete")) == []


@pytest.mark.usefixtures("agent")
def test_ttl_after_finished_removes_a_finished_job_and_its_pod(
    connection: ClusterConnection,
) -> None:
    record = make_record("ctrl-ttl", namespace=connection.namespace)
    namespace_keyring(connection, create=True)  # its pod mounts the namespace's signing keys
    JobWorkload().create(connection, job_manifest(record, ttl_seconds=1, command=QUICK))
    _wait(lambda: connection.list_pods(job_selector("ctrl-ttl")), "the pod")
    _wait(
        lambda: (
            JobWorkload().get(connection, "ctrl-ttl") is None
            and not connection.list_pods(job_selector("ctrl-ttl"))
        ),
        "the ttl-after-finished controller and the garbage collector",
    )


STOPPED = (sys.executable, "-c", "import os, signal\nos.kill(os.getpid(), signal.SIGTERM)")


@pytest.mark.usefixtures("agent")
@pytest.mark.parametrize(
    ("timeout", "reason"), [(None, "BackoffLimitExceeded"), (600.0, "PodFailurePolicy")]
)
def test_a_run_that_ended_as_stopped_runs_again_unless_a_deadline_stopped_it(
    connection: ClusterConnection, timeout: float | None, reason: str
) -> None:
    """The job controller's own reading of the policy: with no deadline, an exit as stopped
    (143) is a run taken away, counted against ``preemption_retries`` (none left here, so the
    Job ends past its backoff limit, not by the exit-code rule) as a Kueue preemption's is,
    whichever of its deletion and its exit the controller sees first; with a deadline it may
    be the deadline's, and the exit-code rule ends the Job."""
    backend = _backend(connection, STOPPED)
    record = make_record(
        "ctrl-stopped", namespace=connection.namespace, preemption_retries=0, timeout=timeout
    )
    backend.submit(record)
    job = _wait(
        lambda: (
            (found := backend.workload.get(connection, "ctrl-stopped"))
            and any(
                c["type"] == "Failed" and c["status"] == "True"
                for c in found["status"].get("conditions", [])
            )
            and found
        ),
        "the Job to fail",
    )
    failed = next(c for c in job["status"]["conditions"] if c["type"] == "Failed")
    assert (failed["reason"], job["status"].get("failed")) == (reason, 1)
