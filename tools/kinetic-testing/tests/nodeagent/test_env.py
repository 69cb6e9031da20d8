"""A pod's environment as a kubelet gives it: the host name its controller chose, and the
interpreter its image stands for."""

from kinetic_testing.nodeagent.env import container_argv, container_env, interpreter_env


def _env_of(pod: dict) -> dict[str, str]:
    def missing(namespace: str, name: str, key: str) -> None:
        return None

    return container_env(
        pod, pod["spec"]["containers"][0], {}, {}, missing, missing, lambda *_: None
    )


def test_a_pod_with_a_hostname_of_its_controllers_runs_under_that_name() -> None:
    pod = {
        "metadata": {"name": "js-workers-1-0-x7k2p", "namespace": "ns"},
        "spec": {"hostname": "js-workers-1-0", "subdomain": "js", "containers": [{}]},
    }
    assert _env_of(pod)["HOSTNAME"] == "js-workers-1-0"


def test_a_pod_without_a_hostname_runs_under_its_own_name() -> None:
    pod = {"metadata": {"name": "plain", "namespace": "ns"}, "spec": {"containers": [{}]}}
    assert _env_of(pod)["HOSTNAME"] == "plain"


def test_a_pod_whose_image_has_an_interpreter_runs_python_as_it_first_on_its_path() -> None:
    python = "/venvs/torch/bin/python"
    env = interpreter_env({"PATH": "/usr/bin", "HOME": "/root"}, python)
    assert env == {"PATH": "/venvs/torch/bin:/usr/bin", "HOME": "/root"}
    argv = container_argv({"command": ["python", "-m", "kinetic_runtime"]}, env, python)
    assert argv == [python, "-m", "kinetic_runtime"]
