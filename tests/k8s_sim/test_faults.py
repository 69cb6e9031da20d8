"""Every injectable fault, observed through the API the way a backend would see it."""

from __future__ import annotations

import json
import time

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from kinetic_testing.k8s import (
    ApiFailure,
    Eviction,
    ImagePullFailure,
    KubernetesSimulator,
    NodeLoss,
    OOMKill,
    Preemption,
    SlowApi,
    Unschedulable,
)

pytestmark = pytest.mark.k8s

# First run: leaves a marker and runs until killed. Any later run: succeeds at once.
ONCE_THEN_OK = (
    "import os, signal, sys, time\n"
    "if os.path.exists(sys.argv[1]):\n    print('second try', flush=True); sys.exit(0)\n"
    "open(sys.argv[1], 'w').close()\n"
    "if len(sys.argv) > 2:\n"
    "    def on_term(*_):\n"
    "        while not os.path.exists(sys.argv[2]):\n            time.sleep(0.02)\n"
    "        sys.exit(143)\n"
    "    signal.signal(signal.SIGTERM, on_term)\n"
    "print('first try', flush=True)\n"
    "while True:\n    time.sleep(0.05)\n"
)


def _once_then_ok(make_job, name, tmp_path, *, backoff_limit=1, labels=None, **spec):
    body = make_job(name, ONCE_THEN_OK, backoff_limit=backoff_limit, labels=labels, **spec)
    body["spec"]["template"]["spec"]["containers"][0]["args"] = [str(tmp_path / f"{name}.mark")]
    return body


def _waiting_reason(pod):
    statuses = (pod or {}).get("status", {}).get("containerStatuses") or []
    return statuses[0]["state"].get("waiting", {}).get("reason") if statuses else None


def _first_pod(sim, job):
    """The job's pod, for jobs that only ever have one."""
    pods = sim.pods(selector=f"job-name={job}")
    assert len(pods) <= 1, [p["metadata"]["name"] for p in pods]
    return pods[0] if pods else None


def _started_pod(sim, job):
    """The name of the job's pod once its command has printed 'first try'."""
    for pod in sim.pods(selector=f"job-name={job}"):
        if "first try" in sim.pod_log(pod["metadata"]["name"]):
            return pod["metadata"]["name"]
    return None


def test_image_pull_failure_keeps_pod_pending_until_lifted(kube, make_job, true_condition):
    fault = kube.sim.inject(ImagePullFailure(job_name="pull", image="gcr.io/p/missing:v1"))
    kube.batch.create_namespaced_job("default", make_job("pull", "print('ran')"))
    pod = kube.sim.wait_for(
        lambda: (
            _waiting_reason(_first_pod(kube.sim, "pull")) == "ErrImagePull"
            and _first_pod(kube.sim, "pull")
        )
    )
    waiting = pod["status"]["containerStatuses"][0]["state"]["waiting"]
    assert "gcr.io/p/missing:v1" in waiting["message"]
    assert pod["status"]["phase"] == "Pending"
    kube.sim.wait_for(lambda: _waiting_reason(_first_pod(kube.sim, "pull")) == "ImagePullBackOff")
    assert kube.sim.running_pids() == []
    assert kube.sim.job("pull")["status"]["active"] == 1
    assert fault.hits == [pod["metadata"]["name"]]
    kube.sim.remove_fault(fault)
    kube.sim.wait_for(lambda: true_condition(kube.sim.job("pull"), "Complete"))


def test_unschedulable_pod_reports_scheduler_message(kube, make_job, true_condition):
    fault = kube.sim.inject(Unschedulable(selector="accel=gpu"))
    kube.batch.create_namespaced_job("default", make_job("gpu", "pass", labels={"accel": "gpu"}))
    kube.batch.create_namespaced_job("default", make_job("cpu", "pass"))
    kube.sim.wait_for(lambda: true_condition(kube.sim.job("cpu"), "Complete"))  # not affected

    def scheduled_condition():
        pod = _first_pod(kube.sim, "gpu")
        conds = (pod or {}).get("status", {}).get("conditions") or []
        return next((c for c in conds if c["type"] == "PodScheduled"), None)

    cond = kube.sim.wait_for(scheduled_condition)
    assert (cond["status"], cond["reason"]) == ("False", "Unschedulable")
    assert cond["message"].startswith("0/3 nodes are available: 3 Insufficient nvidia.com/gpu.")
    assert _first_pod(kube.sim, "gpu")["status"]["phase"] == "Pending"
    assert "nodeName" not in _first_pod(kube.sim, "gpu")["spec"]
    kube.sim.remove_fault(fault)
    kube.sim.wait_for(lambda: true_condition(kube.sim.job("gpu"), "Complete"))


def test_one_shot_oom_kill_then_retry_succeeds(kube, make_job, tmp_path, true_condition):
    body = _once_then_ok(make_job, "oom", tmp_path, labels={"tier": "big"})
    kube.batch.create_namespaced_job("default", body)
    first = kube.sim.wait_for(lambda: _started_pod(kube.sim, "oom"))
    fault = kube.sim.inject(OOMKill(selector="tier=big", times=1))
    job = kube.sim.wait_for(
        lambda: true_condition(kube.sim.job("oom"), "Complete") and kube.sim.job("oom")
    )
    assert (job["status"]["failed"], job["status"]["succeeded"]) == (1, 1)
    [killed] = fault.hits
    assert killed == first
    pod = kube.sim.pod(killed)
    assert pod["status"]["phase"] == "Failed"
    terminated = pod["status"]["containerStatuses"][0]["state"]["terminated"]
    assert (terminated["reason"], terminated["exitCode"]) == ("OOMKilled", 137)
    assert kube.sim.pod_log(killed) == "first try\n"


def test_eviction_fails_the_pod_with_reason_evicted(kube, make_job, loop_code, true_condition):
    kube.batch.create_namespaced_job("default", make_job("ev", loop_code))
    kube.sim.wait_for(kube.sim.running_pids)
    kube.sim.inject(Eviction(job_name="ev"))
    failed = kube.sim.wait_for(lambda: true_condition(kube.sim.job("ev"), "Failed"))
    assert failed["reason"] == "BackoffLimitExceeded"
    pod = _first_pod(kube.sim, "ev")
    assert (pod["status"]["phase"], pod["status"]["reason"]) == ("Failed", "Evicted")
    assert "low on resource: memory" in pod["status"]["message"]
    assert true_condition(pod, "DisruptionTarget")["reason"] == "TerminationByKubelet"
    assert kube.sim.running_pids() == []


def test_spot_preemption_is_ignored_by_pod_failure_policy(kube, make_job, tmp_path, true_condition):
    body = _once_then_ok(
        make_job,
        "spot",
        tmp_path,
        backoff_limit=0,
        podFailurePolicy={
            "rules": [
                {
                    "action": "Ignore",
                    "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}],
                }
            ]
        },
    )
    kube.batch.create_namespaced_job("default", body)
    first = kube.sim.wait_for(lambda: _started_pod(kube.sim, "spot"))
    kube.sim.inject(Preemption(job_name="spot", times=1))
    job = kube.sim.wait_for(
        lambda: true_condition(kube.sim.job("spot"), "Complete") and kube.sim.job("spot")
    )
    assert "failed" not in job["status"]  # the disruption did not count against backoffLimit
    preempted = kube.sim.pod(first)
    assert (preempted["status"]["phase"], preempted["status"]["reason"]) == ("Failed", "Terminated")
    assert "imminent node shutdown" in preempted["status"]["message"]
    assert true_condition(preempted, "DisruptionTarget")["reason"] == "TerminationByKubelet"


def test_scheduler_preemption_deletes_the_pod_and_job_replaces_it(make_job, tmp_path):
    go = tmp_path / "go"
    body = _once_then_ok(make_job, "victim", tmp_path)
    body["spec"]["template"]["spec"]["containers"][0]["args"].append(str(go))
    body["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] = 30
    with KubernetesSimulator(grace_period_cap=30) as sim, sim.api_client() as api:
        client.BatchV1Api(api).create_namespaced_job("default", body)
        first = sim.wait_for(lambda: _started_pod(sim, "victim"))
        fault = sim.inject(Preemption(job_name="victim", by="scheduler", times=1))
        victim = sim.wait_for(
            lambda: (
                (sim.pod(first) or {}).get("metadata", {}).get("deletionTimestamp")
                and sim.pod(first)
            )
        )
        cond = next(c for c in victim["status"]["conditions"] if c["type"] == "DisruptionTarget")
        assert cond["reason"] == "PreemptionByScheduler"
        sim.remove_fault(fault)
        go.touch()  # let the victim finish its SIGTERM handler
        job = sim.wait_for(
            lambda: (
                # Complete waits for the terminating victim, so its failure is counted by then.
                any(
                    c["type"] == "Complete"
                    for c in (sim.job("victim") or {}).get("status", {}).get("conditions", [])
                )
                and sim.job("victim")
            )
        )
        assert job["status"]["failed"] == 1
        assert sim.pod(victim["metadata"]["name"]) is None


@pytest.mark.parametrize("delete_pod", [False, True])
def test_node_loss(kube, make_job, loop_code, alive, delete_pod):
    kube.batch.create_namespaced_job("default", make_job("lost", loop_code, backoff_limit=3))
    [pid] = kube.sim.wait_for(kube.sim.running_pids)
    [first] = [p["metadata"]["name"] for p in kube.sim.pods(selector="job-name=lost")]
    kube.sim.inject(NodeLoss(job_name="lost", times=1, delete_pod=delete_pod))
    kube.sim.wait_for(lambda: not alive(pid), message="the pod's process killed")
    if delete_pod:
        kube.sim.wait_for(lambda: kube.sim.pod(first) is None, message="PodGC deleted the pod")
    else:
        pod = kube.sim.wait_for(
            lambda: kube.sim.pod(first)["status"]["phase"] == "Failed" and kube.sim.pod(first)
        )
        cond = next(c for c in pod["status"]["conditions"] if c["type"] == "DisruptionTarget")
        assert (cond["reason"], cond["message"]) == (
            "DeletionByPodGC",
            "PodGC: node no longer exists",
        )
        state = pod["status"]["containerStatuses"][0]["state"]["terminated"]
        assert state["reason"] == "ContainerStatusUnknown"
    # The Job counts the lost pod as failed and starts a replacement.
    kube.sim.wait_for(lambda: kube.sim.job("lost")["status"].get("failed") == 1)
    kube.sim.wait_for(lambda: len(kube.sim.running_pids()) == 1)


def test_slow_api_delays_matching_requests(kube):
    fault = kube.sim.inject(SlowApi(delay_ms=200, path_contains="/jobs"))
    started = time.monotonic()
    kube.batch.list_namespaced_job("default")
    assert time.monotonic() - started >= 0.2  # a lower bound: the delay is a sleep
    kube.core.list_namespaced_pod("default")
    assert fault.hits == 1


def test_api_failure_is_one_shot(kube, make_job):
    fault = kube.sim.inject(ApiFailure(code=500, method="POST"))
    with pytest.raises(ApiException) as err:
        kube.batch.create_namespaced_job("default", make_job("flaky", "pass"))
    assert err.value.status == 500
    body = json.loads(err.value.body)
    assert (body["kind"], body["reason"]) == ("Status", "InternalError")
    kube.batch.create_namespaced_job("default", make_job("flaky", "pass"))
    assert fault.hits == 1
    assert [j["metadata"]["name"] for j in kube.sim.jobs()] == ["flaky"]
