"""Each injected fault yields the pod status a real kubelet writes, and our backend maps it."""

from __future__ import annotations

import pytest
from kubernetes.client.exceptions import ApiException

from kinetic_gke.status import job_state
from kinetic_protocol import JobStatus
from kinetic_testing.nodeagent import NodeAgent

pytestmark = pytest.mark.realk8s

SLEEP = "import time; time.sleep(600)"


def _job_sel(name: str) -> str:
    return f"batch.kubernetes.io/job-name={name}"


def _state(h, name: str):
    return job_state(h.job(name), h.job_pods(name), unschedulable_timeout=600)


def _condition(pod: dict, kind: str) -> dict | None:
    for cond in pod["status"].get("conditions") or []:
        if cond["type"] == kind:
            return cond
    return None


def test_image_pull_failure(agent: NodeAgent, h) -> None:
    agent.fail_image_pull(h.ns, selector=_job_sel("img"))
    h.create_job("img", "print('never')")

    def waiting(reason: str):
        def check():
            pod = h.only_pod("img")
            statuses = (pod or {}).get("status", {}).get("containerStatuses") or []
            ok = statuses and statuses[0]["state"].get("waiting", {}).get("reason") == reason
            return pod if ok else None

        return check

    h.wait(waiting("ErrImagePull"), what="ErrImagePull")
    pod = h.wait(waiting("ImagePullBackOff"), what="ImagePullBackOff")
    assert pod["status"]["phase"] == "Pending"
    assert pod["status"]["containerStatuses"][0]["state"]["waiting"]["message"] == (
        'Back-off pulling image "python:3.11-slim"'
    )
    state = _state(h, "img")
    assert state.status == JobStatus.FAILED
    assert state.detail.startswith("ImagePullBackOff")
    agent.clear_faults()  # the registry recovers: the pull succeeds, the pod runs
    h.wait(lambda: h.job_condition("img", "Complete"), what="Job Complete after recovery")


def test_oom_kill(agent: NodeAgent, h) -> None:
    agent.oom_kill(h.ns, selector=_job_sel("oom"))
    h.create_job("oom", SLEEP)
    h.wait(lambda: h.job_condition("oom", "Failed"), what="Job Failed")
    pod = h.only_pod("oom", "Failed")
    terminated = pod["status"]["containerStatuses"][0]["state"]["terminated"]
    assert (terminated["exitCode"], terminated["reason"]) == (137, "OOMKilled")
    state = _state(h, "oom")
    assert (state.status, state.detail, state.exit_code) == (JobStatus.FAILED, "OOMKilled", 137)


def test_eviction(agent: NodeAgent, h) -> None:
    agent.evict(h.ns, selector=_job_sel("ev"))
    h.create_job("ev", SLEEP)
    h.wait(lambda: h.job_condition("ev", "Failed"), what="Job Failed")
    pod = h.only_pod("ev", "Failed")
    assert pod["status"]["reason"] == "Evicted"
    assert pod["status"]["message"].startswith("The node was low on resource: memory.")
    assert _condition(pod, "DisruptionTarget")["reason"] == "TerminationByKubelet"
    state = _state(h, "ev")
    assert state.status == JobStatus.FAILED
    assert state.detail.startswith("evicted: The node was low on resource: memory.")


def test_spot_preemption(agent: NodeAgent, h) -> None:
    agent.preempt_spot(h.ns, selector=_job_sel("spot"))
    spot = {
        "nodeSelector": {"cloud.google.com/gke-spot": "true"},
        "tolerations": [{"key": "cloud.google.com/gke-spot", "operator": "Equal",
                         "value": "true", "effect": "NoSchedule"}],
    }  # fmt: skip
    h.create_job("spot", SLEEP, pod_spec=spot)
    h.wait(lambda: h.job_condition("spot", "Failed"), what="Job Failed")
    pod = h.only_pod("spot", "Failed")
    assert pod["spec"]["nodeName"] == "cpu-spot-0"
    assert pod["status"]["reason"] == "Terminated"
    assert _condition(pod, "DisruptionTarget")["reason"] == "TerminationByKubelet"
    terminated = pod["status"]["containerStatuses"][0]["state"]["terminated"]
    assert terminated["exitCode"] == 143  # SIGTERM'd by the graceful node shutdown
    state = _state(h, "spot")
    assert state.status == JobStatus.FAILED
    assert state.detail == "node shutdown or spot preemption"


def test_node_loss(agent: NodeAgent, h) -> None:
    agent.lose_node(h.ns, selector=_job_sel("lost"))
    h.create_job("lost", SLEEP)
    h.wait(lambda: h.job_condition("lost", "Failed"), what="Job Failed")
    h.wait(lambda: not h.job_pods("lost"), what="pod force-deleted")
    with pytest.raises(ApiException) as raised:
        h.core.read_node("cpu-0")
    assert raised.value.status == 404
    state = _state(h, "lost")
    assert state.status == JobStatus.FAILED
    assert "node was lost" in state.detail or "node lost" in state.detail
    # With the only on-demand CPU node gone, a CPU job waits; it runs once the node is back.
    h.create_job("after", "print('back')")
    h.wait(lambda: (p := h.only_pod("after")) and _condition(p, "PodScheduled"), what="verdict")
    assert _condition(h.only_pod("after"), "PodScheduled")["reason"] == "Unschedulable"
    agent.restore_node("cpu-0")
    h.wait(lambda: h.job_condition("after", "Complete"), what="Job Complete on restored node")


def test_unreachable_kubelet_fails_log_reads(agent: NodeAgent, h) -> None:
    h.create_job("mute", "print('hi', flush=True); import time; time.sleep(600)")
    pod = h.wait(lambda: h.only_pod("mute", "Running"), what="Running pod")
    name = pod["metadata"]["name"]
    h.wait(lambda: h.logs(name) == "hi\n", what="log line")
    agent.set_unreachable(pod["spec"]["nodeName"])
    with pytest.raises(ApiException) as raised:
        h.logs(name)
    assert raised.value.status == 500
