"""Fixtures of the scenario suite: isolated Kinetic state per test, and the backend under test.

Adding a backend
    Append its name to ``SCENARIO_BACKENDS`` and provide a fixture called
    ``<name>_scenario_env`` (here or in a plugin) that makes the backend usable for one test:
    start its simulator, set the variables it needs with ``monkeypatch``, and tear it all down.
    Every scenario that takes ``kinetic_backend`` then runs against it unchanged. Scenarios
    that take ``local_backend`` test behaviour specific to local processes and run once.
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

from example_env import example_scenario_env  # noqa: F401  (a third-party backend's fixture)
from gke_env import gke_api_proxy_fixture, gke_scenario_env  # noqa: F401  (gke fixtures)
from scenario_support import ScenarioBackend, local_job_pids

from kinetic_testing.nodeagent import NodeAgent

SCENARIO_BACKENDS = ["local", "gke", "pathways", "example"]


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
    return agent


@pytest.fixture
def local_scenario_env() -> None:
    """The local backend needs nothing beyond the isolated home."""


@pytest.fixture(params=SCENARIO_BACKENDS)
def kinetic_backend(request: pytest.FixtureRequest) -> ScenarioBackend:
    """The backend a portable scenario runs against (one test per entry of SCENARIO_BACKENDS)."""
    name: str = request.param
    request.getfixturevalue(f"{name}_scenario_env")
    return ScenarioBackend(name)


@pytest.fixture
def local_backend(local_scenario_env: None) -> ScenarioBackend:
    """The local backend, for scenarios about local processes, slots and files."""
    return ScenarioBackend("local")


@pytest.fixture
def store_root(isolated_kinetic: Path) -> Path:
    """Where the local backend's default ``file://`` store keeps objects."""
    return isolated_kinetic / "store"
