"""A JobSet through the real JobSet controller and webhooks, admitted by Kueue as one workload,
its pods run by the node agent under the host names JobSet gives them."""

from __future__ import annotations

import pytest

from kinetic_protocol.queueing import DEFAULT_QUEUE
from kinetic_testing.controlplane.cluster import ControlPlane
from kinetic_testing.nodeagent import NodeAgent

pytestmark = pytest.mark.realk8s

PRINT = (
    "import os; e = os.environ.get\n"
    "print('host', e('HOSTNAME'), 'index', e('JOB_COMPLETION_INDEX'),"
    " 'coordinator', e('COORDINATOR'), flush=True)"
)


def test_a_queued_jobset_of_two_jobs_of_two_pods_is_admitted_whole_and_completes(
    real_k8s: ControlPlane, agent: NodeAgent, h
) -> None:
    container = {
        "name": "main",
        "image": "img",
        "command": ["python", "-c", PRINT],
        # Host 0's stable name, as a multi-node job hands it to every host.
        "env": [{"name": "COORDINATOR", "value": "js-workers-0-0.js"}],
        "resources": {"requests": {"cpu": "100m"}},
    }
    job = {
        "parallelism": 2,
        "completions": 2,
        "completionMode": "Indexed",
        "backoffLimit": 0,
        "template": {"spec": {"restartPolicy": "Never", "containers": [container]}},
    }
    body = {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": "js", "labels": {"kueue.x-k8s.io/queue-name": DEFAULT_QUEUE}},
        "spec": {
            "network": {"enableDNSHostnames": True},
            "replicatedJobs": [{"name": "workers", "replicas": 2, "template": {"spec": job}}],
        },
    }
    created = h.custom.create_namespaced_custom_object(
        "jobset.x-k8s.io", "v1alpha2", h.ns, "jobsets", body
    )
    assert created["spec"]["suspend"] is True, "Kueue's webhook holds it until admitted"

    def completed() -> dict | None:
        jobset = h.custom.get_namespaced_custom_object(
            "jobset.x-k8s.io", "v1alpha2", h.ns, "jobsets", "js"
        )
        conditions = (jobset.get("status") or {}).get("conditions") or []
        done = any(c["type"] == "Completed" and c["status"] == "True" for c in conditions)
        return jobset if done else None

    h.wait(completed, timeout=60, what="the JobSet to complete")

    workloads = real_k8s.request("GET", f"/apis/kueue.x-k8s.io/v1beta2/namespaces/{h.ns}/workloads")
    assert len(workloads["items"]) == 1, "one workload for the whole JobSet"
    workload = workloads["items"][0]
    assert [(s["name"], s["count"]) for s in workload["spec"]["podSets"]] == [("workers", 4)]
    admitted = workload["status"]["conditions"]
    assert any(c["type"] == "Admitted" and c["status"] == "True" for c in admitted)

    pods = h.pods("jobset.sigs.k8s.io/jobset-name=js")
    hosts = {f"js-workers-{j}-{c}": c for j in (0, 1) for c in (0, 1)}
    assert sorted(p["spec"]["hostname"] for p in pods) == sorted(hosts)
    assert {p["spec"]["subdomain"] for p in pods} == {"js"}
    assert {p["status"]["phase"] for p in pods} == {"Succeeded"}
    for pod in pods:
        host = pod["spec"]["hostname"]
        # Host 0's name resolves to this machine, where every pod process listens.
        expected = f"host {host} index {hosts[host]} coordinator 127.0.0.1\n"
        assert h.logs(pod["metadata"]["name"]) == expected
    service = h.core.read_namespaced_service("js", h.ns)
    assert service.spec.cluster_ip == "None", "the headless service the host names live in"
