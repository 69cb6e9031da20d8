"""Jobs through the official client: lifecycle, status, errors and admission."""

from __future__ import annotations

import json
import sys

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

pytestmark = pytest.mark.k8s


def test_job_runs_to_complete_and_log_is_tailable(kube, make_job):
    job = client.V1Job(
        metadata=client.V1ObjectMeta(name="hello"),
        spec=client.V1JobSpec(
            backoff_limit=0,
            template=client.V1PodTemplateSpec(
                spec=client.V1PodSpec(
                    restart_policy="Never",
                    containers=[
                        client.V1Container(
                            name="main",
                            image="python:3.11-slim",
                            command=[sys.executable, "-c", "print('one'); print('hi')"],
                        )
                    ],
                )
            ),
        ),
    )
    created = kube.batch.create_namespaced_job("default", job)
    assert created.metadata.uid
    assert created.metadata.resource_version
    assert created.spec.selector.match_labels == {
        "batch.kubernetes.io/controller-uid": created.metadata.uid
    }

    def complete():
        status = kube.batch.read_namespaced_job_status("hello", "default").status
        return status if any(c.type == "Complete" for c in status.conditions or []) else None

    status = kube.sim.wait_for(complete, message="job hello to complete")
    assert status.succeeded == 1
    assert status.failed is None  # zero counts are omitted, as on a real cluster
    assert status.completion_time is not None
    assert status.start_time is not None
    assert [c.type for c in status.conditions] == ["SuccessCriteriaMet", "Complete"]

    pods = kube.core.list_namespaced_pod("default", label_selector="job-name=hello").items
    assert len(pods) == 1
    pod = pods[0]
    assert pod.metadata.name.startswith("hello-")
    assert len(pod.metadata.name) == len("hello-") + 5
    assert pod.metadata.labels["batch.kubernetes.io/job-name"] == "hello"
    assert pod.metadata.labels["controller-uid"] == created.metadata.uid
    owner = pod.metadata.owner_references[0]
    assert (owner.kind, owner.name, owner.uid, owner.controller) == (
        "Job",
        "hello",
        created.metadata.uid,
        True,
    )
    assert pod.status.phase == "Succeeded"
    terminated = pod.status.container_statuses[0].state.terminated
    assert (terminated.exit_code, terminated.reason) == (0, "Completed")

    assert kube.core.read_namespaced_pod_log(pod.metadata.name, "default") == "one\nhi\n"
    tail = kube.core.read_namespaced_pod_log(pod.metadata.name, "default", tail_lines=1)
    assert tail == "hi\n"
    assert kube.sim.validation_errors == []


def test_failing_job_respects_backoff_limit(kube, make_job, true_condition):
    kube.batch.create_namespaced_job(
        "default", make_job("boom", "import sys; sys.exit(3)", backoff_limit=2)
    )
    failed = kube.sim.wait_for(
        lambda: true_condition(kube.sim.job("boom") or {}, "Failed"), message="job boom to fail"
    )
    assert failed["reason"] == "BackoffLimitExceeded"
    job = kube.sim.job("boom")
    assert true_condition(job, "FailureTarget")["reason"] == "BackoffLimitExceeded"
    assert job["status"]["failed"] == 3  # the first try plus backoffLimit retries
    assert "completionTime" not in job["status"]
    pods = kube.sim.pods(selector="job-name=boom")
    assert len(pods) == 3
    for pod in pods:
        assert pod["status"]["phase"] == "Failed"
        terminated = pod["status"]["containerStatuses"][0]["state"]["terminated"]
        assert (terminated["exitCode"], terminated["reason"]) == (3, "Error")


def test_env_working_dir_and_var_expansion(kube, make_job, tmp_path, true_condition):
    code = "import os, sys; print(os.getcwd(), os.environ['GREETING'], sys.argv[1])"
    body = make_job(
        "envy",
        code,
        env=[{"name": "WHO", "value": "pod"}, {"name": "GREETING", "value": "hello-$(WHO)"}],
    )
    container = body["spec"]["template"]["spec"]["containers"][0]
    container["args"] = ["$(GREETING)"]
    container["workingDir"] = str(tmp_path)
    kube.batch.create_namespaced_job("default", body)
    kube.sim.wait_for(lambda: true_condition(kube.sim.job("envy") or {}, "Complete"))
    pod = kube.sim.pods(selector="job-name=envy")[0]["metadata"]["name"]
    assert kube.sim.pod_log(pod).split() == [str(tmp_path), "hello-pod", "hello-pod"]


def test_list_with_label_selectors(kube, make_job):
    for name, labels in (
        ("a1", {"app": "a", "tier": "x"}),
        ("a2", {"app": "a"}),
        ("b1", {"app": "b", "tier": "y"}),
    ):
        kube.batch.create_namespaced_job("default", make_job(name, "pass", labels=labels))

    def names(selector: str) -> list[str]:
        items = kube.batch.list_namespaced_job("default", label_selector=selector).items
        return sorted(j.metadata.name for j in items)

    assert names("app=a") == ["a1", "a2"]
    assert names("app!=a") == ["b1"]
    assert names("tier") == ["a1", "b1"]
    assert names("!tier") == ["a2"]
    assert names("tier in (x,y),app=b") == ["b1"]
    assert names("tier notin (x)") == ["a2", "b1"]
    assert names("") == ["a1", "a2", "b1"]
    with pytest.raises(ApiException) as err:
        kube.batch.list_namespaced_job("default", label_selector="app in (a")
    assert err.value.status == 400


def test_duplicate_create_is_409_already_exists(kube, make_job):
    kube.batch.create_namespaced_job("default", make_job("twice", "pass"))
    with pytest.raises(ApiException) as err:
        kube.batch.create_namespaced_job("default", make_job("twice", "pass"))
    assert err.value.status == 409
    body = json.loads(err.value.body)
    assert body["kind"] == "Status"
    assert body["status"] == "Failure"
    assert body["reason"] == "AlreadyExists"
    assert body["code"] == 409
    assert body["details"] == {"name": "twice", "group": "batch", "kind": "jobs"}


@pytest.mark.parametrize("verb", ["get", "delete"])
def test_missing_job_is_404_not_found(kube, verb):
    call = kube.batch.read_namespaced_job if verb == "get" else kube.batch.delete_namespaced_job
    with pytest.raises(ApiException) as err:
        call("ghost", "default")
    assert err.value.status == 404
    body = json.loads(err.value.body)
    assert (body["reason"], body["details"]["name"]) == ("NotFound", "ghost")
    assert body["message"] == 'jobs.batch "ghost" not found'


def _drop_container_name(body):
    del body["spec"]["template"]["spec"]["containers"][0]["name"]


def _add_unknown_field(body):
    body["spec"]["template"]["spec"]["containers"][0]["comand"] = ["typo"]


def _bad_restart_policy(body):
    body["spec"]["template"]["spec"]["restartPolicy"] = "Always"


def _bad_name(body):
    body["metadata"]["name"] = "Not_A_DNS_Name"


def _post_raw(kube, body):
    """POST through the client's transport: the typed methods would reject these bodies
    client-side (pydantic), but other clients (kubectl, dynamic, older versions) send them."""
    api = kube.batch.api_client
    url = f"{kube.sim.host}/apis/batch/v1/namespaces/default/jobs"
    response = api.call_api("POST", url, {"Content-Type": "application/json"}, body)
    response.read()
    api.response_deserialize(response, {"201": "V1Job"})


@pytest.mark.parametrize(
    ("mutate", "fragment", "raw"),
    [
        (_drop_container_name, "'name' is a required property", True),
        (_add_unknown_field, "'comand' was unexpected", True),
        (_bad_restart_policy, "restartPolicy", False),
        (_bad_name, "RFC 1123", False),
    ],
)
def test_invalid_body_is_422_and_recorded(kube, make_job, mutate, fragment, raw):
    body = make_job("bad", "pass")
    mutate(body)
    send = _post_raw if raw else lambda k, b: k.batch.create_namespaced_job("default", b)
    with pytest.raises(ApiException) as err:
        send(kube, body)
    assert err.value.status == 422
    status = json.loads(err.value.body)
    assert status["reason"] == "Invalid"
    assert fragment in status["message"]
    assert status["details"]["kind"] == "Job"
    assert status["details"]["causes"]
    [failure] = kube.sim.validation_errors
    assert failure.kind == "Job"
    assert any(fragment in m for m in failure.messages)
    assert kube.sim.jobs() == []


def test_ttl_after_finished_removes_job_and_pods(kube, make_job):
    kube.batch.create_namespaced_job(
        "default", make_job("brief", "pass", ttlSecondsAfterFinished=0)
    )
    kube.sim.wait_for(lambda: kube.sim.requests and not kube.sim.jobs(), message="job removed")
    kube.sim.wait_for(lambda: not kube.sim.pods(), message="pods removed")
    with pytest.raises(ApiException) as err:
        kube.batch.read_namespaced_job("brief", "default")
    assert err.value.status == 404


def test_active_deadline_fails_the_job(kube, make_job, loop_code, true_condition):
    kube.batch.create_namespaced_job(
        "default", make_job("slowpoke", loop_code, activeDeadlineSeconds=1)
    )
    failed = kube.sim.wait_for(lambda: true_condition(kube.sim.job("slowpoke") or {}, "Failed"))
    assert failed["reason"] == "DeadlineExceeded"
    kube.sim.wait_for(lambda: not kube.sim.running_pids(), message="the pod process killed")


def test_pod_failure_policy_fail_job_on_exit_code(kube, make_job, true_condition):
    body = make_job(
        "fatal",
        "import sys; sys.exit(42)",
        backoff_limit=5,
        podFailurePolicy={
            "rules": [{"action": "FailJob", "onExitCodes": {"operator": "In", "values": [42]}}]
        },
    )
    kube.batch.create_namespaced_job("default", body)
    failed = kube.sim.wait_for(lambda: true_condition(kube.sim.job("fatal") or {}, "Failed"))
    assert failed["reason"] == "PodFailurePolicy"
    assert "exit code 42" in failed["message"]
    assert len(kube.sim.pods(selector="job-name=fatal")) == 1  # no retry despite backoffLimit


def test_missing_namespace_is_404(kube, make_job):
    with pytest.raises(ApiException) as err:
        kube.batch.create_namespaced_job("nowhere", make_job("x", "pass"))
    assert err.value.status == 404
    assert json.loads(err.value.body)["message"] == 'namespaces "nowhere" not found'


@pytest.mark.parametrize(
    ("change", "fragment"),
    [
        ({"command": ["/no/such/binary"]}, "'/no/such/binary'"),
        ({"workingDir": "/no/such/dir"}, "'/no/such/dir'"),
        ({"command": None, "args": ["--flag"]}, "give the container an explicit `command`"),
    ],
)
def test_container_that_cannot_start_fails_with_start_error(kube, make_job, change, fragment):
    body = make_job("nostart", "pass")
    container = body["spec"]["template"]["spec"]["containers"][0]
    container.update(change)
    if container["command"] is None:
        del container["command"]
    kube.batch.create_namespaced_job("default", body)
    pod = kube.sim.wait_for(
        lambda: [p for p in kube.sim.pods() if p["status"]["phase"] == "Failed"]
    )
    terminated = pod[0]["status"]["containerStatuses"][0]["state"]["terminated"]
    assert (terminated["reason"], terminated["exitCode"]) == ("StartError", 128)
    assert fragment in terminated["message"]
