"""Pathways slices on the real control plane: the LWS controller and webhooks make the pods,
the node agent runs each host as a process, and the backend reads all of them."""

import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import msgspec
import pytest

from kinetic_gke.labels import job_selector
from kinetic_pathways import PathwaysBackend
from kinetic_pathways.status import recorded_hosts
from kinetic_protocol import ConfigError, JobRecord, JobState, JobStatus
from kinetic_testing.controlplane.proxy import ApiProxy
from kinetic_testing.nodeagent import NodeAgent

pytestmark = pytest.mark.realk8s
T = TypeVar("T")

HOLD = (
    sys.executable,
    "-c",
    "import os, time\n"
    "print('host', os.environ['LWS_WORKER_INDEX'], 'pid', os.getpid(), flush=True)\n"
    "while True: time.sleep(0.05)",
)
"""Every host announces itself and runs until it is killed."""
FINISH = (
    sys.executable,
    "-c",
    "import os, sys\n"
    "host = int(os.environ['LWS_WORKER_INDEX'])\n"
    "print('host', host, 'of', os.environ['KINETIC_NUM_HOSTS'], flush=True)\n"
    "sys.exit(int(os.environ.get('EXIT_ON_HOST_' + str(host), '0')))",
)
"""Every host prints and exits (``EXIT_ON_HOST_<i>`` picks host i's status)."""
GATED = (
    sys.executable,
    "-c",
    "import os, time\n"
    "first_run_done = os.environ['GATE'] + '.' + os.environ['KINETIC_HOST_INSTANCE']\n"
    "if os.path.exists(first_run_done):\n"
    "    while True: time.sleep(1)\n"
    "while not os.path.exists(os.environ['GATE']): time.sleep(0.02)\n"
    "open(first_run_done, 'w').close()",
)
"""Every host runs until the file ``GATE`` exists, then exits 0; restarted, it only waits (as
the runtime does)."""


def make_record(job_id: str, namespace: str, accelerator: str = "tpu-v5e-16") -> JobRecord:
    return JobRecord(
        job_id=job_id,
        backend="pathways",
        project="kinetic-tests",
        cluster_name="kinetic-cluster",
        zone="us-central2-b",
        namespace=namespace,
        bucket_name="kinetic-tests-jobs",
        k8s_name=job_id,
        image_uri="python:3.11-slim",
        accelerator=accelerator,
        func_name="train",
        display_name="train",
        created_at="2026-11-24T00:00:00+00:00",
    )


def wait_for(check: Callable[[], T | None], what: str, timeout: float = 30.0) -> T:
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g}s waiting for {what}")
        time.sleep(0.05)


def submit(backend: PathwaysBackend, record: JobRecord, command: tuple[str, ...], **env: str):
    body: dict[str, Any] = backend.manifest(record)
    container = body["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"][0]
    container["command"], container["args"] = list(command), []
    container["env"] += [{"name": k, "value": v} for k, v in env.items()]
    backend.signing_keys(create=True)  # the pods mount the namespace's keys, as submit makes sure
    assert backend.workload.create(backend.connection, body)


def pods(backend: PathwaysBackend, record: JobRecord) -> list[dict[str, Any]]:
    return backend.connection.list_pods(f"kinetic.dev/job-id={record.job_id}")


def state(backend: PathwaysBackend, record: JobRecord) -> JobState:
    return backend.statuses([record])[record.job_id]


def running_pids(backend: PathwaysBackend, record: JobRecord, hosts: int) -> dict[int, int] | None:
    found = {}
    for host in range(hosts):
        for line in backend.logs(record, host=host).splitlines():
            if line.startswith("host "):
                found[host] = int(line.split()[3])
    return found if len(found) == hosts else None


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_four_hosts_run_on_four_tpu_nodes_with_their_index(
    backend: PathwaysBackend, k8s_namespace: str
) -> None:
    record = make_record("slice-ok", k8s_namespace)
    submit(backend, record, FINISH)
    final = wait_for(
        lambda: (s := state(backend, record)).status.is_terminal and s, "the slice to finish"
    )
    assert final.status is JobStatus.SUCCEEDED
    # Kinetic stopped the finished slice and recorded why: no pods left, same state for all.
    wait_for(lambda: not pods(backend, record), "the slice's pods to go")
    assert state(backend, record).status is JobStatus.SUCCEEDED


def test_a_worker_oom_killed_while_the_leader_runs_fails_the_job_within_one_poll(
    backend: PathwaysBackend, agent: NodeAgent, k8s_namespace: str
) -> None:
    record = make_record("slice-oom", k8s_namespace)
    submit(backend, record, HOLD)
    pids = wait_for(lambda: running_pids(backend, record, 4), "all 4 hosts to run")
    assert state(backend, record).status is JobStatus.RUNNING
    agent.oom_kill(k8s_namespace, f"{record.k8s_name}-0-2")

    def oom_seen() -> bool:
        for pod in pods(backend, record):
            for status in pod["status"].get("containerStatuses") or []:
                if (status.get("lastState") or {}).get("terminated", {}).get("reason"):
                    return True
        return False

    wait_for(oom_seen, "host 2's container to be OOM-killed")
    got = state(backend, record)  # the first poll after the kill
    assert (got.status, got.detail, got.exit_code) == (
        JobStatus.FAILED,
        "host 2 of 4: OOMKilled, exit 137",
        137,
    )
    wait_for(lambda: not any(alive(pid) for pid in pids.values()), "every host to stop")
    wait_for(lambda: not pods(backend, record), "the slice's pods to go")
    lws = backend.workload.get(backend.connection, record.k8s_name)
    assert lws is not None and lws["spec"]["replicas"] == 0  # kept, with its outcome
    again = state(backend, record)
    assert (again.status, again.detail) == (got.status, got.detail)
    # The pods are gone; the end of each host's output was kept on the LeaderWorkerSet.
    assert backend.logs(record, host=2) == f"host 2 pid {pids[2]}\n"
    assert backend.logs(record, host="all", tail=1).count("[host ") == 4


def test_a_worker_exiting_non_zero_fails_the_job_even_if_the_leader_succeeds(
    backend: PathwaysBackend, k8s_namespace: str
) -> None:
    record = make_record("slice-exit", k8s_namespace, accelerator="tpu-v5litepod-2x4")
    submit(backend, record, FINISH, EXIT_ON_HOST_1="2")
    final = wait_for(
        lambda: (s := state(backend, record)).status.is_terminal and s, "the slice to finish"
    )
    assert (final.status, final.detail) == (JobStatus.FAILED, "host 1 of 2: exit 2")


def test_logs_per_host_and_all_hosts_prefixed(backend: PathwaysBackend, k8s_namespace: str) -> None:
    record = make_record("slice-logs", k8s_namespace, accelerator="tpu-v5litepod-2x4")
    submit(backend, record, HOLD)
    pids = wait_for(lambda: running_pids(backend, record, 2), "both hosts to run")
    assert backend.logs(record).startswith("host 0 ")
    assert backend.logs(record, host=1).startswith("host 1 ")
    every = backend.logs(record, host="all").splitlines()
    assert every == [f"[host 0] host 0 pid {pids[0]}", f"[host 1] host 1 pid {pids[1]}"]
    with pytest.raises(ConfigError, match="runs on 2 hosts"):
        backend.logs(record, host=2)


def test_follow_all_hosts_interleaves_until_the_job_ends(
    backend: PathwaysBackend, k8s_namespace: str
) -> None:
    record = make_record("slice-follow", k8s_namespace, accelerator="tpu-v5litepod-2x4")
    submit(backend, record, FINISH)
    lines = list(backend.follow_logs(record, host="all"))
    assert sorted(lines) == ["[host 0] host 0 of 2\n", "[host 1] host 1 of 2\n"]
    assert state(backend, record).status is JobStatus.SUCCEEDED


def test_list_and_delete_find_slices_by_their_own_label(
    backend: PathwaysBackend, k8s_namespace: str
) -> None:
    record = make_record("slice-list", k8s_namespace, accelerator="tpu-v5litepod-2x4")
    submit(backend, record, HOLD)
    assert backend.list_job_ids() == ["slice-list"]
    wait_for(lambda: running_pids(backend, record, 2), "both hosts to run")
    backend.delete(record, timeout=30, poll_interval=0.2)
    assert backend.list_job_ids() == []
    assert state(backend, record).status is JobStatus.NOT_FOUND


def test_a_single_host_shape_is_refused_before_anything_is_created(
    backend: PathwaysBackend, k8s_namespace: str
) -> None:
    record = make_record("slice-small", k8s_namespace, accelerator="tpu-v5e-4")
    with pytest.raises(ConfigError, match=r"fits on one host.*backend='gke'"):
        backend.submit(record)
    assert backend.list_job_ids() == []


def test_the_served_lws_version_is_discovered(backend: PathwaysBackend) -> None:
    assert backend.workload.version(backend.connection) == "v1"
    manifest = backend.manifest(make_record("x", "ns"))
    assert manifest["apiVersion"] == "leaderworkerset.x-k8s.io/v1"  # built with it


def test_a_batch_of_slices_is_read_with_one_list_of_sets_and_one_of_pods(
    proxied_backend: tuple[PathwaysBackend, ApiProxy], k8s_namespace: str
) -> None:
    backend, proxy = proxied_backend
    children = [
        msgspec.structs.replace(
            make_record(f"grp-{i}", k8s_namespace, accelerator="tpu-v5litepod-2x4"),
            group_id="grp-00c0ffee",
            group_index=i,
        )
        for i in range(3)
    ]
    for child in children:
        submit(backend, child, HOLD)
    wait_for(
        lambda: all(s.status is JobStatus.RUNNING for s in backend.statuses(children).values()),
        "every slice to run",
    )  # the first poll that sees a slice run records its pods, once
    proxy.clear()
    states = backend.statuses(children)
    assert set(states) == {child.job_id for child in children}
    calls = [(r.method, r.path.rsplit("/", 1)[-1]) for r in proxy.requests]
    assert calls == [("GET", "leaderworkersets"), ("GET", "pods")], calls


def test_a_reader_whose_listing_predates_anothers_stop_reports_the_recorded_outcome(
    backend: PathwaysBackend,
    other_reader: PathwaysBackend,
    k8s_namespace: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Two readers poll one slice (a submitter and an attached handle). One sees it succeed
    and stops it; the other listed the set just before that and lists the pods just after,
    when they are gone. It must report the recorded SUCCEEDED, not "host 0 was replaced"."""
    record = make_record("slice-race", k8s_namespace, accelerator="tpu-v5litepod-2x4")
    gate = tmp_path / "gate"
    submit(backend, record, GATED, GATE=str(gate))

    def running_with_hosts_recorded() -> bool:
        if state(backend, record).status is not JobStatus.RUNNING:
            return False
        lws = backend.workload.get(backend.connection, record.k8s_name)
        return lws is not None and recorded_hosts(lws) is not None

    wait_for(running_with_hosts_recorded, "the slice to run with its hosts recorded")
    selector = job_selector(record.job_id, other_reader.app)
    stale = other_reader.workload.list_matching(other_reader.connection, selector)
    gate.touch()
    final = wait_for(
        lambda: (s := state(backend, record)).status.is_terminal and s, "the slice to end"
    )
    assert final.status is JobStatus.SUCCEEDED
    wait_for(lambda: not pods(backend, record), "the stopped slice's pods to go")
    monkeypatch.setattr(other_reader.workload, "list_matching", lambda connection, sel: stale)
    seen = other_reader.statuses([record])[record.job_id]
    assert (seen.status, seen.detail) == (JobStatus.SUCCEEDED, "")
