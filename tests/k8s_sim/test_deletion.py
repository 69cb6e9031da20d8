"""Deleting Jobs and Pods: propagation policies, and that the processes really die."""

from __future__ import annotations

import re
import sys

import pytest

from kinetic_testing.k8s import KubernetesSimulator

pytestmark = pytest.mark.k8s

# Starts a grandchild in the same process group, prints its pid, then loops.
FAMILY = (
    "import subprocess, sys, time\n"
    "kid = subprocess.Popen([sys.executable, '-c', 'import time\\nwhile True: time.sleep(0.05)'])\n"
    "print('child', kid.pid, flush=True)\n"
    "while True:\n    time.sleep(0.05)\n"
)
# On SIGTERM, says so and exits only once the file named in argv[1] exists.
STUBBORN = (
    "import os, signal, sys, time\n"
    "def on_term(*_):\n"
    "    print('got SIGTERM', flush=True)\n"
    "    while not os.path.exists(sys.argv[1]):\n        time.sleep(0.02)\n"
    "    sys.exit(0)\n"
    "signal.signal(signal.SIGTERM, on_term)\n"
    "print('started', flush=True)\n"
    "while True:\n    time.sleep(0.05)\n"
)


def _started(sim, selector):
    pods = sim.pods(selector=selector)
    if (pods and "started" in sim.pod_log(pods[0]["metadata"]["name"])) or any(
        "child" in sim.pod_log(p["metadata"]["name"]) for p in pods
    ):
        return pods[0]
    return None


def test_background_delete_kills_process_group_and_removes_pods(kube, make_job, alive):
    kube.batch.create_namespaced_job("default", make_job("family", FAMILY))
    pod = kube.sim.wait_for(lambda: _started(kube.sim, "job-name=family"), message="pod started")
    log = kube.sim.pod_log(pod["metadata"]["name"])
    grandchild = int(re.search(r"child (\d+)", log).group(1))
    [main] = kube.sim.running_pids()
    assert alive(main)
    assert alive(grandchild)

    status = kube.batch.delete_namespaced_job("family", "default", propagation_policy="Background")
    assert status["status"] == "Success"  # the client returns this union type as a dict
    kube.sim.wait_for(lambda: not kube.sim.pods() and not kube.sim.jobs(), message="all gone")
    kube.sim.wait_for(lambda: not alive(main) and not alive(grandchild), message="processes dead")


def test_foreground_delete_keeps_job_until_pods_are_gone(tmp_path, make_job):
    go = tmp_path / "go"
    body = make_job("fg", STUBBORN)
    pod_spec = body["spec"]["template"]["spec"]
    pod_spec["terminationGracePeriodSeconds"] = 30
    pod_spec["containers"][0]["args"] = [str(go)]
    with KubernetesSimulator(grace_period_cap=30) as sim, sim.api_client() as api:
        from kubernetes import client

        batch = client.BatchV1Api(api)
        batch.create_namespaced_job("default", body)
        sim.wait_for(lambda: _started(sim, "job-name=fg"), message="pod started")
        _, code, _ = batch.delete_namespaced_job_with_http_info(
            "fg", "default", propagation_policy="Foreground"
        )
        assert code == 202  # accepted, not yet deleted
        pod = sim.wait_for(
            lambda: (
                "got SIGTERM" in sim.pod_log(sim.pods()[0]["metadata"]["name"]) and sim.pods()[0]
            )
        )
        assert pod["metadata"]["deletionTimestamp"]
        job = sim.job("fg")  # the pod's process is still alive, so the Job must still be here
        assert job is not None
        assert job["metadata"]["finalizers"] == ["foregroundDeletion"]
        assert job["metadata"]["deletionTimestamp"]
        go.touch()
        sim.wait_for(lambda: not sim.jobs() and not sim.pods(), message="job and pod gone")
        assert sim.running_pids() == []


def test_sigterm_is_escalated_to_sigkill_after_grace(kube, make_job, tmp_path):
    body = make_job("stubborn", STUBBORN)
    body["spec"]["template"]["spec"]["containers"][0]["args"] = [str(tmp_path / "never")]
    kube.batch.create_namespaced_job("default", body)
    pod = kube.sim.wait_for(lambda: _started(kube.sim, "job-name=stubborn"))
    name = pod["metadata"]["name"]
    kube.core.delete_namespaced_pod(name, "default")
    kube.sim.wait_for(lambda: kube.sim.pod(name) is None, message="pod removed after SIGKILL")
    kube.sim.wait_for(lambda: len(kube.sim.running_pids()) <= 1)  # only a replacement may run


def test_default_delete_orphans_the_pods(kube, make_job, loop_code, alive):
    kube.batch.create_namespaced_job("default", make_job("orph", loop_code))
    pod = kube.sim.wait_for(lambda: _started(kube.sim, "job-name=orph"))
    [pid] = kube.sim.running_pids()
    _, code, headers = kube.batch.delete_namespaced_job_with_http_info("orph", "default")
    assert code == 202
    assert "child pods are preserved" in headers["Warning"]
    kube.sim.wait_for(lambda: not kube.sim.jobs(), message="job gone")
    kube.sim.wait_for(
        lambda: not kube.sim.pod(pod["metadata"]["name"])["metadata"].get("ownerReferences")
    )
    assert alive(pid)  # an orphaned pod keeps running
    kube.core.delete_namespaced_pod(pod["metadata"]["name"], "default")
    kube.sim.wait_for(lambda: not kube.sim.pods() and not alive(pid))


def test_delete_collection_by_label(kube, make_job, loop_code):
    for name, group in (("c1", "doomed"), ("c2", "doomed"), ("c3", "kept")):
        kube.batch.create_namespaced_job(
            "default", make_job(name, loop_code, labels={"group": group})
        )
    kube.sim.wait_for(lambda: len(kube.sim.running_pids()) == 3, message="three pods running")
    kube.batch.delete_collection_namespaced_job(
        "default", label_selector="group=doomed", propagation_policy="Background"
    )
    kube.sim.wait_for(lambda: len(kube.sim.pods()) == 1 and len(kube.sim.running_pids()) == 1)
    assert [j["metadata"]["name"] for j in kube.sim.jobs()] == ["c3"]
    assert kube.sim.pods()[0]["metadata"]["labels"]["job-name"] == "c3"


def test_deleted_pod_counts_as_failure_and_is_replaced(kube, make_job, loop_code):
    kube.batch.create_namespaced_job("default", make_job("phoenix", loop_code, backoff_limit=1))
    first = kube.sim.wait_for(lambda: _started(kube.sim, "job-name=phoenix"))
    kube.core.delete_namespaced_pod(first["metadata"]["name"], "default", grace_period_seconds=0)

    def replacement():
        pods = kube.sim.pods(selector="job-name=phoenix")
        return [p for p in pods if p["metadata"]["name"] != first["metadata"]["name"]]

    [second] = kube.sim.wait_for(replacement, message="a replacement pod")
    job = kube.sim.wait_for(lambda: (kube.sim.job("phoenix") or {}).get("status", {}).get("failed"))
    assert job == 1
    assert second["metadata"]["name"].startswith("phoenix-")
    kube.batch.delete_namespaced_job("phoenix", "default", propagation_policy="Background")
    kube.sim.wait_for(lambda: not kube.sim.running_pids())


def test_stop_kills_every_process(make_job, loop_code, alive):
    sim = KubernetesSimulator().start()
    try:
        with sim.api_client() as api:
            from kubernetes import client

            client.BatchV1Api(api).create_namespaced_job("default", make_job("l", loop_code))
            pids = sim.wait_for(sim.running_pids, message="a running pod")
    finally:
        sim.stop()
    assert not any(alive(pid) for pid in pids)
    assert sys.executable  # the interpreter the pods ran is ours


CRASHING_TEST_PROCESS = """
import sys, os
from kinetic_testing.k8s import KubernetesSimulator
sim = KubernetesSimulator(workdir=sys.argv[2]).start()
from kubernetes import client
body = {"metadata": {"name": "orphan-risk"}, "spec": {"restartPolicy": "Never", "containers": [
    {"name": "main", "image": "python", "command": [sys.executable, "-c", sys.argv[1]]}]}}
client.CoreV1Api(sim.api_client()).create_namespaced_pod("default", body)
[pid] = sim.wait_for(sim.running_pids, timeout=30)
print(pid, flush=True)
os._exit(1)  # die without stop(), atexit or finalizers, like a test run killed outright
"""


def test_pod_processes_die_with_a_crashed_simulator(alive, loop_code, k8s_sim, tmp_path):
    import subprocess

    out = subprocess.run(
        [sys.executable, "-c", CRASHING_TEST_PROCESS, loop_code, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert out.returncode == 1, out.stderr
    pid = int(out.stdout.split()[0])
    k8s_sim.wait_for(lambda: not alive(pid), message=f"orphaned pod process {pid} to die")
