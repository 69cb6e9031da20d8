"""Pytest fixtures for the Kubernetes simulator tier.

Import `k8s_sim` into a `conftest.py` (`from kinetic_testing.k8s.fixtures import k8s_sim`).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from .simulator import KubernetesSimulator

__all__ = ["k8s_sim"]


@pytest.fixture
def k8s_sim() -> Iterator[KubernetesSimulator]:
    """A started simulator on a free port; stopped (every pod process killed) afterwards.

    Teardown fails the test if the simulator itself hit a bug (`sim.errors`).
    """
    with KubernetesSimulator() as sim:
        yield sim
    if sim.errors:
        pytest.fail("the Kubernetes simulator failed:\n" + "\n".join(sim.errors))
