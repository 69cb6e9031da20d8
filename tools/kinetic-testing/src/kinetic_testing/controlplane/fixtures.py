"""Pytest side of the real control plane: availability, the session cluster, namespaces.

The tier runs whenever it can: binaries already built, or a Go toolchain to build them (the
build's progress is shown on the terminal). Without Go it is skipped, with one line saying
how to enable it, unless `KINETIC_REQUIRE_REAL_K8S=1` (CI) turns that into a failure.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from .build import BuildError, Built, built, ensure_built, go_toolchain
from .cluster import ControlPlane
from .queues import make_namespace_queue, make_session_queues

if TYPE_CHECKING:
    from kinetic_testing.nodeagent import NodeAgent

__all__ = [
    "AGENT",
    "MARKER",
    "NAMESPACE",
    "REQUIRE_ENV",
    "k8s_binaries",
    "k8s_namespace",
    "node_agent",
    "prepare_binaries",
    "real_k8s",
    "required",
    "uses_real_k8s",
]

MARKER = "realk8s"
REQUIRE_ENV = "KINETIC_REQUIRE_REAL_K8S"


_BINARIES = pytest.StashKey["Built | None"]()
"""The build found (or made) for this session, resolved once, before any test changes the
environment (the scenario suite's isolation removes every ``KINETIC_*`` variable, among them
``KINETIC_K8S_CACHE``)."""


NAMESPACE = pytest.StashKey[tuple[ControlPlane, str]]()
AGENT = pytest.StashKey["NodeAgent"]()
"""The node agent a test used: its failure report shows where each running pod's processes
are stuck."""
"""The control plane and namespace a test used, on its item: its failure report shows what the
namespace held (set by ``k8s_namespace``, which a scenario may reach dynamically)."""


def uses_real_k8s(item: pytest.Item) -> bool:
    """Whether ``item`` belongs to the tier: marked, or needing ``real_k8s`` statically.

    A fixture that reaches the control plane through ``request.getfixturevalue`` is invisible
    here: such parametrisations carry the mark themselves (``pytest.param(..., marks=...)``).
    """
    return item.get_closest_marker(MARKER) is not None or "real_k8s" in getattr(
        item, "fixturenames", ()
    )


def prepare_binaries(config: pytest.Config, *, build: bool = True) -> str | None:
    """Find the binaries (building them if ``build`` and needed, showing progress) and keep
    them for the session; the reason the tier can't run, or None."""
    found = built()
    if found is None and build:
        capture = config.pluginmanager.getplugin("capturemanager")
        try:
            go_toolchain()
            with capture.global_and_fixture_disabled():
                found = ensure_built()
        except BuildError as error:
            return f"real Kubernetes control plane tier skipped: {error}"
    config.stash[_BINARIES] = found
    return None


def required() -> bool:
    return os.environ.get(REQUIRE_ENV, "") not in ("", "0")


@pytest.fixture(scope="session")
def k8s_binaries(pytestconfig: pytest.Config) -> Built:
    """The control plane's binaries, as resolved at collection time (see the plugin)."""
    binaries = pytestconfig.stash.get(_BINARIES, None)
    if binaries is None:
        problem = "the control plane binaries were not built at collection time"
        if required():
            pytest.fail(problem)
        pytest.skip(problem)
    return binaries


@pytest.fixture(scope="session")
def real_k8s(
    k8s_binaries: Built, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ControlPlane]:
    """etcd, kube-apiserver, kube-controller-manager and the LWS and Kueue controllers for the
    session, with the queues ``kinetic up`` would make (see ``queues``).

    The binaries were built at collection time (see the plugin), outside any test's timeout.
    """
    run_dir = Path(tmp_path_factory.mktemp("k8s-control-plane"))
    with ControlPlane(k8s_binaries, run_dir) as plane:
        make_session_queues(plane)
        yield plane


@pytest.fixture
def k8s_namespace(real_k8s: ControlPlane, request: pytest.FixtureRequest) -> Iterator[str]:
    """A namespace of this test's own, with its default LocalQueue; deleted afterwards without
    waiting for it to go."""
    name = real_k8s.create_namespace(request.node.name)
    if real_k8s.kueue:
        make_namespace_queue(real_k8s, name)
    request.node.stash[NAMESPACE] = (real_k8s, name)
    yield name
    real_k8s.delete_namespace(name)


@pytest.fixture
def node_agent(
    real_k8s: ControlPlane, tmp_path: Path, request: pytest.FixtureRequest
) -> Iterator[NodeAgent]:
    """The default GKE-like nodes, running pods as local processes with a small host
    environment; fails the test if the agent recorded an error."""
    from kinetic_testing.nodeagent import NodeAgent, base_host_env

    with NodeAgent(
        real_k8s.api_client, workdir=tmp_path / "nodes", host_env=base_host_env(os.environ)
    ) as agent:
        request.node.stash[AGENT] = agent
        yield agent
        errors = list(agent.errors)
    assert errors == [], f"the node agent failed: {errors}"
