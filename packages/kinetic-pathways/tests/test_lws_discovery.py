"""Which LeaderWorkerSet API version to use, and the error when a cluster has none.

Discovery's answer is given directly here (a unit test of the choice); the cluster tests
discover it from the real API server."""

from typing import Any

import pytest

from kinetic_pathways.workload import LeaderWorkerSetWorkload
from kinetic_protocol import ConfigError


class Discovery:
    """Answers ``GET /apis`` with ``groups`` and counts the calls."""

    def __init__(self, groups: list[dict[str, Any]]) -> None:
        self.groups = groups
        self.calls = 0
        self.api_client = None

    def read(self, doing: str, fn: Any, *args: Any) -> dict[str, Any]:
        self.calls += 1
        return {"groups": self.groups}


def group(*versions: str, preferred: str | None = None) -> dict[str, Any]:
    return {
        "name": "leaderworkerset.x-k8s.io",
        "versions": [{"version": v} for v in versions],
        "preferredVersion": {"version": preferred or versions[0]},
    }


def test_the_preferred_served_version_is_used_and_asked_for_once() -> None:
    discovery = Discovery([{"name": "apps", "versions": []}, group("v2", "v1", preferred="v2")])
    workload = LeaderWorkerSetWorkload()
    assert workload.version(discovery) == "v2"  # type: ignore[arg-type]
    assert workload.version(discovery) == "v2"  # type: ignore[arg-type]
    assert discovery.calls == 1


def test_a_cluster_without_the_crd_is_told_how_to_install_it() -> None:
    workload = LeaderWorkerSetWorkload()
    with pytest.raises(ConfigError) as caught:
        workload.version(Discovery([{"name": "apps", "versions": [{"version": "v1"}]}]))  # type: ignore[arg-type]
    message = str(caught.value)
    assert "no LeaderWorkerSet API" in message
    assert "kubectl apply --server-side -f https://github.com/kubernetes-sigs/lws" in message
    assert "kinetic up" in message
