"""Pod logs: whole, tailed, followed while the container runs, previous, and the errors."""

from __future__ import annotations

import json
import sys

import pytest
from kubernetes.client.exceptions import ApiException

from kinetic_testing.k8s import ImagePullFailure

pytestmark = pytest.mark.k8s

# Prints a line, waits for the file named in argv[1], prints another, exits.
TWO_STEP = (
    "import os, sys, time\n"
    "print('first', flush=True)\n"
    "while not os.path.exists(sys.argv[1]):\n    time.sleep(0.02)\n"
    "print('second', flush=True)\n"
)


def _pod(name, containers, restart="Never"):
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {"restartPolicy": restart, "containers": containers},
    }


def _container(name, code, *args):
    return {"name": name, "image": "python:3.11", "command": [sys.executable, "-c", code, *args]}


def test_follow_streams_lines_as_they_are_printed(kube, tmp_path):
    go = tmp_path / "go"
    kube.core.create_namespaced_pod(
        "default", _pod("talker", [_container("main", TWO_STEP, str(go))])
    )
    kube.sim.wait_for(lambda: "first" in kube.sim.pod_log("talker"), message="first line")
    response = kube.core.read_namespaced_pod_log(
        "talker", "default", follow=True, _preload_content=False
    )
    try:
        chunks = response.stream(1024)
        received = b""
        while b"first\n" not in received:
            received += next(chunks)
        # The process is blocked on `go`, so the stream is live, not a finished file.
        assert kube.sim.pod("talker")["status"]["phase"] == "Running"
        assert b"second" not in received
        go.touch()
        received += b"".join(chunks)  # ends when the container exits
    finally:
        response.release_conn()
    assert received == b"first\nsecond\n"
    kube.sim.wait_for(lambda: kube.sim.pod("talker")["status"]["phase"] == "Succeeded")


def test_log_of_a_container_not_started_is_400(kube):
    kube.sim.inject(ImagePullFailure(selector="app=stuck"))
    body = _pod("stuck", [_container("main", "pass")])
    body["metadata"]["labels"] = {"app": "stuck"}
    kube.core.create_namespaced_pod("default", body)
    kube.sim.wait_for(lambda: kube.sim.pod("stuck")["status"].get("containerStatuses"))
    with pytest.raises(ApiException) as err:
        kube.core.read_namespaced_pod_log("stuck", "default")
    assert err.value.status == 400
    message = json.loads(err.value.body)["message"]
    assert message.startswith('container "main" in pod "stuck" is waiting to start: ')


def test_container_parameter_is_checked(kube):
    containers = [_container("main", "print('from main')"), _container("side", "pass")]
    kube.core.create_namespaced_pod("default", _pod("duo", containers))
    kube.sim.wait_for(lambda: kube.sim.pod("duo")["status"]["phase"] == "Succeeded")
    with pytest.raises(ApiException) as err:
        kube.core.read_namespaced_pod_log("duo", "default")
    assert "a container name must be specified for pod duo" in json.loads(err.value.body)["message"]
    assert kube.core.read_namespaced_pod_log("duo", "default", container="main") == "from main\n"
    assert kube.core.read_namespaced_pod_log("duo", "default", container="side") == ""
    with pytest.raises(ApiException) as err:
        kube.core.read_namespaced_pod_log("duo", "default", container="nope")
    assert err.value.status == 400
    with pytest.raises(ApiException) as err:
        kube.core.read_namespaced_pod_log("ghost", "default")
    assert err.value.status == 404


def test_on_failure_restarts_in_place_and_keeps_previous_log(kube, tmp_path):
    marker = tmp_path / "tried"
    code = (
        "import os, sys\n"
        "if not os.path.exists(sys.argv[1]):\n"
        "    open(sys.argv[1], 'w').close(); print('attempt one', flush=True); sys.exit(1)\n"
        "print('attempt two', flush=True)\n"
    )
    kube.core.create_namespaced_pod(
        "default", _pod("retry", [_container("main", code, str(marker))], restart="OnFailure")
    )
    kube.sim.wait_for(lambda: kube.sim.pod("retry")["status"]["phase"] == "Succeeded")
    status = kube.core.read_namespaced_pod_status("retry", "default").status
    main = status.container_statuses[0]
    assert main.restart_count == 1
    assert main.last_state.terminated.exit_code == 1
    assert kube.core.read_namespaced_pod_log("retry", "default") == "attempt two\n"
    previous = kube.core.read_namespaced_pod_log("retry", "default", previous=True)
    assert previous == "attempt one\n"


def test_limit_bytes_and_tail_zero(kube):
    kube.core.create_namespaced_pod(
        "default", _pod("chatty", [_container("main", "print('abcdef'); print('ghi')")])
    )
    kube.sim.wait_for(lambda: kube.sim.pod("chatty")["status"]["phase"] == "Succeeded")
    assert kube.core.read_namespaced_pod_log("chatty", "default", limit_bytes=3) == "abc"
    assert kube.core.read_namespaced_pod_log("chatty", "default", tail_lines=0) == ""
