"""The ``gke`` backend of the scenario suite: a real control plane and fake-gcs-server.

Imported by ``conftest.py``. etcd, kube-apiserver, kube-controller-manager and the
LeaderWorkerSet controller run for the whole session (``real_k8s``); each test gets its own
namespace and a node agent that schedules its pods and runs each one's command
(``python -m kinetic_runtime``) as a local process with this interpreter, reaching the fake
GCS server through ``STORAGE_EMULATOR_HOST``.
"""

import hashlib
import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import msgspec
import pytest

from kinetic.submission import debugging, target
from kinetic_protocol import Capabilities, DebugOptions
from kinetic_testing.controlplane.cluster import ControlPlane
from kinetic_testing.controlplane.proxy import ApiProxy
from kinetic_testing.nodeagent import NodeAgent
from kinetic_testing.ports import claim_ports, release_ports

__all__ = ["GKE_IMAGE", "GKE_PROJECT", "gke_api_proxy_fixture", "gke_scenario_env"]

GKE_PROJECT = "kinetic-scenarios"
GKE_IMAGE = "python:3.11-slim"
"""The custom image scenario jobs name; used as-is, so nothing is built."""


@pytest.fixture
def gke_scenario_env(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    gcs_bucket: str,
    real_k8s: ControlPlane,
    k8s_namespace: str,
    node_agent: NodeAgent,
) -> Iterator[NodeAgent]:
    """Point Kinetic's ``gke`` backend at the real control plane (this test's namespace) and a
    fresh bucket; fails the test if the node agent broke (``node_agent``) or the kubeconfig
    was written to."""
    kubeconfig = tmp_path / "kube" / "config"
    kubeconfig.parent.mkdir()
    shutil.copyfile(real_k8s.kubeconfig, kubeconfig)
    before = hashlib.sha256(kubeconfig.read_bytes()).hexdigest()
    bin_dir = str(Path(sys.executable).parent)
    monkeypatch.setenv("PATH", bin_dir + os.pathsep + os.environ.get("PATH", ""))
    monkeypatch.setenv("KUBECONFIG", str(kubeconfig))
    monkeypatch.setenv("KINETIC_KUBE_CONTEXT", real_k8s.context)
    monkeypatch.setenv("KINETIC_NAMESPACE", k8s_namespace)
    monkeypatch.setenv("KINETIC_STORE", gcs_bucket)
    monkeypatch.setenv("KINETIC_PROJECT", GKE_PROJECT)
    monkeypatch.setenv("KINETIC_GKE_POLL", "0.05,0.5")
    # Scripts run in subprocesses decorate with backend="gke" alone: name the image here.
    monkeypatch.setenv("KINETIC_CONTAINER_IMAGE", GKE_IMAGE)
    monkeypatch.setattr(target, "debug_options", _debug_options_on_a_shared_network)
    # Every pod's process shares this machine's network: host 0 of a job of several hosts
    # listens on ports no other test's job is given (on GKE each pod has its own network).
    group_ports = claim_ports(3)
    monkeypatch.setenv("KINETIC_HOST_GROUP_PORTS", ",".join(map(str, group_ports)))
    yield node_agent
    release_ports(group_ports)
    assert hashlib.sha256(kubeconfig.read_bytes()).hexdigest() == before, "kubeconfig modified"


def _debug_options_on_a_shared_network(capabilities: Capabilities) -> DebugOptions:
    """What a debug job is given, but any free port instead of 5678: on a cluster every pod
    has its own network, here every pod's process shares this machine's, so two debug jobs
    of tests run at once must not both listen on 5678. The job records the port it took, and
    forwarding reads it from there, as it does the 5678 of a real pod."""
    return msgspec.structs.replace(debugging.debug_options(capabilities), port=0)


@pytest.fixture(name="gke_api_proxy")
def gke_api_proxy_fixture(
    gke_scenario_env: NodeAgent,
    real_k8s: ControlPlane,
    k8s_namespace: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[ApiProxy]:
    """Like ``gke_scenario_env``, with Kinetic's API calls going through a recording,
    fault-injecting proxy (the node agent still talks to the API server directly)."""
    with ApiProxy(real_k8s) as proxy:
        kubeconfig = proxy.kubeconfig(
            tmp_path / "kube" / "proxy.json", context="proxy", namespace=k8s_namespace
        )
        monkeypatch.setenv("KUBECONFIG", str(kubeconfig))
        monkeypatch.setenv("KINETIC_KUBE_CONTEXT", "proxy")
        yield proxy
