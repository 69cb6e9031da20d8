"""Jobs through the real job, GC and ttl-after-finished controllers, run by the node agent."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest
from kubernetes import watch

from kinetic_testing.controlplane.cluster import ControlPlane
from kinetic_testing.nodeagent import NodeAgent, base_host_env

pytestmark = pytest.mark.realk8s

PRINT_ENV = (
    "import os, sys; print('hello', os.environ['POD'], os.environ['NS'], os.environ['IP']);"
    "print('tmp', os.environ['TMPDIR']); print('err line', file=sys.stderr)"
)
ENV = [
    {"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
    {"name": "NS", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
    {"name": "IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
]


def test_job_completes_and_its_logs_come_through_the_apiserver(agent: NodeAgent, h) -> None:
    started = time.monotonic()
    h.create_job("ok", PRINT_ENV, container={"env": ENV})
    h.wait(lambda: h.job_condition("ok", "Complete"), what="Job Complete")
    elapsed = time.monotonic() - started
    pod = h.only_pod("ok", "Succeeded")
    assert pod is not None
    name = pod["metadata"]["name"]
    ip = pod["status"]["podIP"]
    assert ip.startswith("10.244.")
    assert pod["spec"]["nodeName"] == "cpu-0"
    terminated = pod["status"]["containerStatuses"][0]["state"]["terminated"]
    assert (terminated["exitCode"], terminated["reason"]) == (0, "Completed")
    text = h.logs(name)
    assert f"hello {name} {h.ns} {ip}\n" in text
    assert "err line\n" in text
    assert str(agent.workdir) in text  # TMPDIR is the pod's own directory
    assert h.logs(name, tail_lines=1) == text.splitlines(keepends=True)[-1]
    assert elapsed < 10


def test_follow_streams_until_the_process_exits(agent: NodeAgent, h) -> None:
    code = "import time\nfor i in range(3):\n    print('tick', i, flush=True); time.sleep(0.3)"
    h.create_job("follow", code)
    pod = h.wait(lambda: h.only_pod("follow", "Running"), what="Running pod")
    stream = h.core.read_namespaced_pod_log(
        pod["metadata"]["name"], h.ns, follow=True, _preload_content=False
    )
    body = stream.read().decode()  # returns only once the agent ends the chunked stream
    assert body == "tick 0\ntick 1\ntick 2\n"


def test_failing_pod_fails_the_job(agent: NodeAgent, h) -> None:
    h.create_job("bad", "import sys; print('boom'); sys.exit(3)")
    failed = h.wait(lambda: h.job_condition("bad", "Failed"), what="Job Failed")
    assert failed["reason"] == "BackoffLimitExceeded"
    pod = h.only_pod("bad", "Failed")
    terminated = pod["status"]["containerStatuses"][0]["state"]["terminated"]
    assert (terminated["exitCode"], terminated["reason"]) == (3, "Error")
    assert h.logs(pod["metadata"]["name"]) == "boom\n"


def test_foreground_delete_kills_the_process_and_gc_removes_everything(
    agent: NodeAgent, h, tmp_path: Path
) -> None:
    pid_file = tmp_path / "pid"
    code = (
        "import os, signal, time\n"
        "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"  # force the SIGKILL path
        f"open({str(pid_file)!r}, 'w').write(str(os.getpid()))\n"
        "time.sleep(600)"
    )
    h.create_job("forever", code)
    h.wait(lambda: h.only_pod("forever", "Running"), what="Running pod")
    pid = int(h.wait(lambda: pid_file.exists() and pid_file.read_text(), what="pid file"))
    started = time.monotonic()
    h.batch.delete_namespaced_job(
        "forever", h.ns, propagation_policy="Foreground", _preload_content=False
    )
    h.wait(lambda: h.job("forever") is None and not h.job_pods("forever"), what="Job and pod gone")
    assert time.monotonic() - started < 8
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_ttl_after_finished_deletes_the_job(agent: NodeAgent, h) -> None:
    """Read from a watch that starts before the create: the TTL controller may delete the
    Job before any poll sees it Complete, but every version of it is in the watch."""
    listed = json.loads(h.batch.list_namespaced_job(h.ns, _preload_content=False).data)
    h.create_job("short", "print('done')", ttl=0)  # deleted as soon as it completes
    seen: list[tuple[str, Any]] = []
    for event in watch.Watch().stream(
        h.batch.list_namespaced_job,
        h.ns,
        field_selector="metadata.name=short",
        resource_version=listed["metadata"]["resourceVersion"],
        timeout_seconds=30,
    ):
        seen.append((event["type"], event["raw_object"]))
        if event["type"] == "DELETED":
            break
    kinds = [kind for kind, _ in seen]
    assert kinds[0] == "ADDED" and kinds[-1] == "DELETED", kinds
    conditions = seen[-1][1].get("status", {}).get("conditions") or []
    complete = [c for c in conditions if c["type"] == "Complete" and c["status"] == "True"]
    assert complete, f"deleted before it completed: {conditions}"
    h.wait(lambda: not h.job_pods("short"), what="pods garbage collected")


def test_secret_and_configmap_env(agent: NodeAgent, h) -> None:
    h.core.create_namespaced_secret(
        h.ns, {"metadata": {"name": "s"}, "stringData": {"token": "t0k"}}, _preload_content=False
    )
    h.core.create_namespaced_config_map(
        h.ns, {"metadata": {"name": "c"}, "data": {"mode": "fast"}}, _preload_content=False
    )
    env = [
        {"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": "s", "key": "token"}}},
        {"name": "MODE", "valueFrom": {"configMapKeyRef": {"name": "c", "key": "mode"}}},
        {"name": "BOTH", "value": "$(MODE)-$(TOKEN)"},
    ]
    h.create_job("env", "import os; print(os.environ['BOTH'])", container={"env": env})
    h.wait(lambda: h.job_condition("env", "Complete"), what="Job Complete")
    assert h.logs(h.only_pod("env")["metadata"]["name"]) == "fast-t0k\n"


def test_stop_kills_processes_quickly(real_k8s, h, tmp_path: Path) -> None:
    agent = NodeAgent(real_k8s.api_client, workdir=tmp_path / "a", host_env={"PATH": "/usr/bin"})
    with agent:
        h.create_job("lingering", "import time; time.sleep(600)")
        h.wait(lambda: h.only_pod("lingering", "Running"), what="Running pod")
        started = time.monotonic()
    assert time.monotonic() - started < 2
    assert agent.errors == []


def test_restart_policy_always_restarts_with_backoff(agent: NodeAgent, h) -> None:
    spec = {
        "restartPolicy": "Always",
        "containers": [{"name": "main", "image": "img", "command": ["python", "-c", "exit(2)"]}],
    }
    h.create_pod("crashy", spec)

    def restarted() -> dict | None:
        statuses = (h.pod("crashy") or {}).get("status", {}).get("containerStatuses") or []
        return statuses[0] if statuses and statuses[0]["restartCount"] >= 2 else None

    status = h.wait(restarted, what="two restarts")
    assert status["lastState"]["terminated"]["exitCode"] == 2
    assert h.pod("crashy")["status"]["phase"] != "Failed"


def test_missing_secret_is_a_container_config_error(agent: NodeAgent, h) -> None:
    from kinetic_gke.status import job_state
    from kinetic_protocol import JobStatus

    env = [{"name": "T", "valueFrom": {"secretKeyRef": {"name": "absent", "key": "k"}}}]
    h.create_job("cfg", "print('never')", container={"env": env})

    def waiting() -> str | None:
        pod = h.only_pod("cfg")
        statuses = (pod or {}).get("status", {}).get("containerStatuses") or []
        return statuses[0]["state"].get("waiting", {}).get("reason") if statuses else None

    assert h.wait(waiting, what="waiting reason") == "CreateContainerConfigError"
    state = job_state(h.job("cfg"), h.job_pods("cfg"), unschedulable_timeout=600)
    assert state.status == JobStatus.FAILED
    assert state.detail.startswith("CreateContainerConfigError")
    h.core.create_namespaced_secret(  # the kubelet retries: once the secret exists, it runs
        h.ns, {"metadata": {"name": "absent"}, "stringData": {"k": "v"}}, _preload_content=False
    )
    h.wait(lambda: h.job_condition("cfg", "Complete"), what="Job Complete")


def test_a_dropped_watch_is_resumed(agent: NodeAgent, h) -> None:
    h.create_job("before", "print(1)")
    h.wait(lambda: h.job_condition("before", "Complete"), what="first Job Complete")
    response = agent.informer._response  # cut the open watch, as a dropped connection would
    assert response is not None
    response.shutdown()
    h.create_job("after", "print(2)")
    h.wait(lambda: h.job_condition("after", "Complete"), what="Job Complete after re-list")


def test_a_failure_report_shows_each_pods_last_lines_and_restarts(
    agent: NodeAgent, h, real_k8s: ControlPlane
) -> None:
    from kinetic_testing.controlplane.snapshot import namespace_snapshot

    h.create_job("talks", "print('the last words of the pod')")
    h.wait(lambda: h.job_condition("talks", "Complete"), what="Job Complete")
    pod = h.only_pod("talks", "Succeeded")
    shown = namespace_snapshot(real_k8s, h.ns).splitlines()
    line = next(
        i for i, text in enumerate(shown) if text.startswith(f"  {pod['metadata']['name']}")
    )
    assert "terminated(Completed) exit 0 restarts=0" in shown[line], shown[line]
    assert shown[line + 1] == "    | the last words of the pod"


def test_a_log_read_after_an_agent_took_over_its_port_reaches_the_new_agent(
    real_k8s: ControlPlane, h, tmp_path: Path
) -> None:
    """The API server keeps its connections to a kubelet's port open; an agent that stopped
    must close them, or the next agent on that port is never asked for its pods' logs."""
    env = base_host_env(os.environ)
    with NodeAgent(real_k8s.api_client, workdir=tmp_path / "first", host_env=env) as first:
        h.create_job("before", "print('from the first agent')")
        pod = h.wait(lambda: h.only_pod("before", "Succeeded"), what="the first pod's end")
        assert h.logs(pod["metadata"]["name"]) == "from the first agent\n"  # a kept connection
        port = first.log_port
    with NodeAgent(real_k8s.api_client, workdir=tmp_path / "second", host_env=env) as second:
        assert second.log_port == port
        h.create_job("after", "print('from the second agent')")
        pod = h.wait(lambda: h.only_pod("after", "Succeeded"), what="the second pod's end")
        assert h.logs(pod["metadata"]["name"]) == "from the second agent\n"
        assert second.errors == []
