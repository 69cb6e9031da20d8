"""LeaderWorkerSets through CustomObjectsApi: create, inspect, run, fail, delete."""

from __future__ import annotations

import json
import sys

import pytest
from kubernetes.client.exceptions import ApiException

pytestmark = pytest.mark.k8s

GROUP, VERSION, PLURAL = "leaderworkerset.x-k8s.io", "v1", "leaderworkersets"
LEADER = (
    "import os, sys, time\n"
    "print(os.environ['LWS_LEADER_ADDRESS'], os.environ['LWS_GROUP_SIZE'],"
    " os.environ['LWS_WORKER_INDEX'], flush=True)\n"
    "while not os.path.exists(sys.argv[1]):\n    time.sleep(0.02)\n"
    "sys.exit(int(sys.argv[2]))\n"
)


def _lws(name, go, exit_code=0, size=3):
    def template(role):
        return {
            "metadata": {"labels": {"role": role}},
            "spec": {
                "containers": [
                    {
                        "name": "main",
                        "image": "us-docker.pkg.dev/cloud-tpu-images/jax:latest",
                        "command": [sys.executable, "-c", LEADER, str(go), str(exit_code)],
                    }
                ]
            },
        }

    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "LeaderWorkerSet",
        "metadata": {"name": name, "labels": {"kinetic/job": name}},
        "spec": {
            "replicas": 1,
            "leaderWorkerTemplate": {
                "size": size,
                "restartPolicy": "RecreateGroupOnPodRestart",
                "leaderTemplate": template("leader"),
                "workerTemplate": template("worker"),
            },
        },
    }


def _condition(obj, kind):
    for cond in (obj.get("status") or {}).get("conditions") or []:
        if cond["type"] == kind:
            return cond
    return None


def test_lws_round_trip(kube, tmp_path):
    custom = kube.custom
    created = custom.create_namespaced_custom_object(
        GROUP, VERSION, "default", PLURAL, _lws("slice", tmp_path / "go")
    )
    assert created["metadata"]["uid"]
    assert created["kind"] == "LeaderWorkerSet"
    got = custom.get_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, "slice")
    assert got["metadata"]["uid"] == created["metadata"]["uid"]
    listed = custom.list_namespaced_custom_object(
        GROUP, VERSION, "default", PLURAL, label_selector="kinetic/job=slice"
    )
    assert [o["metadata"]["name"] for o in listed["items"]] == ["slice"]
    assert (
        custom.list_namespaced_custom_object(
            GROUP, VERSION, "default", PLURAL, label_selector="kinetic/job=other"
        )["items"]
        == []
    )

    def available():
        obj = custom.get_namespaced_custom_object_status(GROUP, VERSION, "default", PLURAL, "slice")
        cond = _condition(obj, "Available")
        return obj if cond and cond["status"] == "True" else None

    status = kube.sim.wait_for(available, message="LWS available")["status"]
    assert (status["replicas"], status["readyReplicas"]) == (1, 1)
    pods = {p["metadata"]["name"]: p for p in kube.sim.pods()}
    assert sorted(pods) == ["slice-0", "slice-0-1", "slice-0-2"]
    worker = pods["slice-0-2"]["metadata"]
    assert worker["labels"]["leaderworkerset.sigs.k8s.io/worker-index"] == "2"
    assert worker["labels"]["role"] == "worker"
    assert worker["annotations"]["leaderworkerset.sigs.k8s.io/leader-name"] == "slice-0"
    assert pods["slice-0"]["metadata"]["labels"]["role"] == "leader"
    assert len(kube.sim.running_pids()) == 1  # only the leader runs a process
    kube.sim.wait_for(lambda: kube.sim.pod_log("slice-0"))
    assert kube.sim.pod_log("slice-0").split() == ["slice-0.slice.default", "3", "0"]

    (tmp_path / "go").touch()
    kube.sim.wait_for(lambda: {p["status"]["phase"] for p in kube.sim.pods()} == {"Succeeded"})
    done = kube.sim.wait_for(
        lambda: (
            _condition(kube.sim.leaderworkersets()[0], "Available")["reason"] == "GroupsCompleted"
            and kube.sim.leaderworkersets()[0]
        )
    )
    assert _condition(done, "Failed") is None

    custom.delete_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, "slice")
    kube.sim.wait_for(lambda: not kube.sim.pods(), message="the group's pods deleted")
    with pytest.raises(ApiException) as err:
        custom.get_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, "slice")
    assert err.value.status == 404
    assert json.loads(err.value.body)["reason"] == "NotFound"
    assert kube.sim.validation_errors == []


def test_failed_leader_marks_lws_failed(kube, tmp_path):
    go = tmp_path / "go"
    go.touch()
    kube.custom.create_namespaced_custom_object(
        GROUP, VERSION, "default", PLURAL, _lws("bad", go, exit_code=7, size=2)
    )

    def failed():
        objs = kube.sim.leaderworkersets()
        cond = _condition(objs[0], "Failed") if objs else None
        return cond if cond and cond["status"] == "True" else None

    cond = kube.sim.wait_for(failed, message="LWS Failed condition")
    assert cond["message"] == "pod bad-0 failed"
    leader = kube.sim.pod("bad-0")
    assert leader["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"] == 7
    kube.sim.wait_for(lambda: kube.sim.pod("bad-0-1")["status"]["phase"] == "Failed")


def _restart_never(body):
    body["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["restartPolicy"] = "Never"


def _unknown_spec_field(body):
    body["spec"]["replica"] = 2


def _container_typo(body):
    body["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["spec"]["containers"][0]["imag"] = "x"


@pytest.mark.parametrize(
    ("mutate", "field"),
    [
        (_restart_never, "spec.leaderWorkerTemplate.workerTemplate.spec.restartPolicy"),
        (_unknown_spec_field, "spec.replica"),
        (_container_typo, "spec.leaderWorkerTemplate.leaderTemplate.spec.containers[0]"),
    ],
)
def test_invalid_lws_is_422(kube, tmp_path, mutate, field):
    body = _lws("nope", tmp_path / "go")
    mutate(body)
    with pytest.raises(ApiException) as err:
        kube.custom.create_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, body)
    assert err.value.status == 422
    causes = json.loads(err.value.body)["details"]["causes"]
    assert field in [c["field"] for c in causes]
    assert len(kube.sim.validation_errors) == 1
    assert kube.sim.leaderworkersets() == []
    assert kube.sim.pods() == []
