"""A pod's environment as a kubelet gives it: the host name its controller chose."""

from kinetic_testing.nodeagent.env import container_env


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
