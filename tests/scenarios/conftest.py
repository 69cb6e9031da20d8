"""Fixtures of the scenario suite: isolated Kinetic state per test, and the backend under test.

Which backends a scenario runs on
    A scenario that takes ``kinetic_backend`` runs once per backend of the backend contract
    (``CONTRACT_BACKENDS``: submit, status, logs, cancel, cleanup, attach, listing, batches,
    resume, keys, captured secrets). One marked ``@client_only`` shows behaviour of the client or
    the runtime that no backend changes (decoration, serialisation, input modes, data planning,
    code shipping) and runs on ``CLIENT_BACKENDS`` instead: ``local``, and ``example-gcs``, a
    third-party backend whose store and data go through fake GCS as on Kubernetes.
    ``@pytest.mark.backends(...)`` names any other set. Scenarios that take ``local_backend``
    test behaviour specific to local processes and run once.

Adding a backend
    Add its name to ``CONTRACT_BACKENDS`` (``scenario_support``) and provide a fixture called
    ``<name>_scenario_env`` (here or in a plugin) that makes the backend usable for one test:
    start what it needs, set the variables it needs with ``monkeypatch``, and tear it all down.
"""

import os
import signal
import sys
from collections.abc import Iterator
from contextlib import suppress
from pathlib import Path

import pytest

# The scenario modules are imported by their plain names, here and inside jobs (from the code
# bundle), the way a user's own module would be.
sys.path.insert(0, str(Path(__file__).resolve().parent))

from example_env import (  # noqa: F401  (a third-party backend's fixtures)
    example_gcs_scenario_env,
    example_scenario_env,
)
from gke_env import gke_api_proxy_fixture, gke_scenario_env  # noqa: F401  (gke fixtures)
from scenario_support import CONTRACT_BACKENDS, ScenarioBackend, backend_params, local_job_pids

from kinetic_gke.k8s import ClusterConnection
from kinetic_gke.provision.slice_role import apply_slice_role
from kinetic_testing.controlplane.cluster import ControlPlane
from kinetic_testing.nodeagent import NodeAgent


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Parametrise ``kinetic_backend`` by the scenario's ``backends`` mark (default: every
    backend of the contract), each parameter carrying its tier's marks."""
    if "kinetic_backend" not in metafunc.fixturenames:
        return
    mark = metafunc.definition.get_closest_marker("backends")
    names = CONTRACT_BACKENDS if mark is None else mark.args
    metafunc.parametrize("kinetic_backend", backend_params(*names), indirect=True)


@pytest.fixture(autouse=True)
def isolated_kinetic(clean_kinetic_env: Path) -> Iterator[Path]:
    """A fresh ``KINETIC_HOME``, profiles file and session, no ``KINETIC_*`` or GCP settings
    from outside (``clean_kinetic_env``).

    Yields the home directory. Any local job still alive at the end is killed with its
    whole process group.
    """
    home = clean_kinetic_env
    try:
        yield home
    finally:
        for pgid in local_job_pids(home):
            with suppress(ProcessLookupError, PermissionError):
                os.killpg(pgid, signal.SIGKILL)


@pytest.fixture
def pathways_scenario_env(request: pytest.FixtureRequest) -> NodeAgent:
    """The gke environment (same cluster, bucket and settings): pathways jobs are
    LeaderWorkerSets on its multi-host TPU pools."""
    agent: NodeAgent = request.getfixturevalue("gke_scenario_env")
    # What `kinetic up` grants the jobs' service account: stopping their own finished slice.
    real_k8s: ControlPlane = request.getfixturevalue("real_k8s")
    namespace: str = request.getfixturevalue("k8s_namespace")
    apply_slice_role(ClusterConnection(real_k8s.api_client(), namespace), namespace, "default")
    return agent


@pytest.fixture
def local_scenario_env() -> None:
    """The local backend needs nothing beyond the isolated home."""


@pytest.fixture
def kinetic_backend(request: pytest.FixtureRequest) -> ScenarioBackend:
    """The backend a portable scenario runs against (see ``pytest_generate_tests``)."""
    name: str = request.param
    request.getfixturevalue(f"{name.replace('-', '_')}_scenario_env")
    return ScenarioBackend(name)


@pytest.fixture
def local_backend(local_scenario_env: None) -> ScenarioBackend:
    """The local backend, for scenarios about local processes, slots and files."""
    return ScenarioBackend("local")


@pytest.fixture
def store_root(isolated_kinetic: Path) -> Path:
    """Where the local backend's default ``file://`` store keeps objects."""
    return isolated_kinetic / "store"
