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

from .build import BuildError, built, ensure_built, go_toolchain
from .cluster import ControlPlane

if TYPE_CHECKING:
    from kinetic_testing.nodeagent import NodeAgent

__all__ = [
    "MARKER",
    "REQUIRE_ENV",
    "k8s_namespace",
    "node_agent",
    "prepare_binaries",
    "real_k8s",
    "required",
]

MARKER = "realk8s"
REQUIRE_ENV = "KINETIC_REQUIRE_REAL_K8S"


def prepare_binaries(config: pytest.Config) -> str | None:
    """Build the binaries if needed, showing progress; the reason the tier can't run, or None."""
    if built() is not None:
        return None
    capture = config.pluginmanager.getplugin("capturemanager")
    try:
        go_toolchain()
        with capture.global_and_fixture_disabled():
            ensure_built()
    except BuildError as error:
        return f"real Kubernetes control plane tier skipped: {error}"
    return None


def required() -> bool:
    return os.environ.get(REQUIRE_ENV, "") not in ("", "0")


@pytest.fixture(scope="session")
def real_k8s(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    """etcd, kube-apiserver, kube-controller-manager and the LWS controller for the session.

    The binaries were built at collection time (see the plugin), outside any test's timeout.
    """
    binaries = built()
    if binaries is None:
        pytest.fail("the control plane binaries are missing; they build at collection time")
    run_dir = Path(tmp_path_factory.mktemp("k8s-control-plane"))
    with ControlPlane(binaries, run_dir) as plane:
        yield plane


@pytest.fixture
def k8s_namespace(real_k8s: ControlPlane, request: pytest.FixtureRequest) -> Iterator[str]:
    """A namespace of this test's own; deleted afterwards without waiting for it to go."""
    name = real_k8s.create_namespace(request.node.name)
    yield name
    real_k8s.delete_namespace(name)


@pytest.fixture
def node_agent(real_k8s: ControlPlane, tmp_path: Path) -> Iterator[NodeAgent]:
    """The default GKE-like nodes, running pods as local processes with a small host
    environment; fails the test if the agent recorded an error."""
    from kinetic_testing.nodeagent import NodeAgent, base_host_env

    with NodeAgent(
        real_k8s.api_client, workdir=tmp_path / "nodes", host_env=base_host_env(os.environ)
    ) as agent:
        yield agent
        errors = list(agent.errors)
    assert errors == [], f"the node agent failed: {errors}"
