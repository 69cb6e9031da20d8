"""A LeaderWorkerSet through the real LWS controller and webhooks, on a multi-host TPU pool."""

from __future__ import annotations

import pytest

from kinetic_testing.nodeagent import NodeAgent

pytestmark = pytest.mark.realk8s

PRINT = (
    "import os, time; e = os.environ.get\n"
    "print('id', e('TPU_WORKER_ID'), 'hosts', e('TPU_WORKER_HOSTNAMES'),"
    " 'leader', e('LWS_LEADER_ADDRESS'), flush=True)\n"
    "time.sleep(600)"
)


def test_lws_of_two_tpu_hosts_runs_with_injected_env(agent: NodeAgent, h) -> None:
    container = {
        "name": "main",
        "image": "img",
        "command": ["python", "-c", PRINT],
        "resources": {"limits": {"google.com/tpu": "4"}, "requests": {"google.com/tpu": "4"}},
    }
    template = {
        "spec": {
            "nodeSelector": {
                "cloud.google.com/gke-tpu-accelerator": "tpu-v5-lite-podslice",
                "cloud.google.com/gke-tpu-topology": "4x4",
            },
            "tolerations": [
                {"key": "google.com/tpu", "operator": "Exists", "effect": "NoSchedule"}
            ],
            "containers": [container],
        }
    }
    body = {
        "apiVersion": "leaderworkerset.x-k8s.io/v1",
        "kind": "LeaderWorkerSet",
        "metadata": {"name": "tpu"},
        "spec": {"replicas": 1, "leaderWorkerTemplate": {"size": 2, "workerTemplate": template}},
    }
    h.custom.create_namespaced_custom_object(
        "leaderworkerset.x-k8s.io", "v1", h.ns, "leaderworkersets", body, _preload_content=False
    )

    def running() -> list[dict] | None:
        pods = h.pods("leaderworkerset.sigs.k8s.io/name=tpu")
        ok = len(pods) == 2 and all(p["status"].get("phase") == "Running" for p in pods)
        return pods if ok else None

    pods = h.wait(running, timeout=30, what="2 Running LWS pods")
    assert {p["metadata"]["name"] for p in pods} == {"tpu-0", "tpu-0-1"}
    assert len({p["spec"]["nodeName"] for p in pods}) == 2  # 4 chips each: one pod per host
    # The webhook injected pod DNS names (tpu-0.tpu, tpu-0.tpu.<ns>); the agent stands in for
    # cluster DNS and hands the processes 127.0.0.1, where every pod process listens.
    assert {p["spec"].get("subdomain") for p in pods} == {"tpu"}
    assert "tpu-0.tpu" in str(pods[0]["spec"]["containers"][0].get("env"))
    hosts = "127.0.0.1,127.0.0.1"
    leader = "127.0.0.1"
    for pod, worker in (("tpu-0", 0), ("tpu-0-1", 1)):
        line = h.wait(lambda p=pod: h.logs(p), what=f"{pod} output")
        assert line == f"id {worker} hosts {hosts} leader {leader}\n"
