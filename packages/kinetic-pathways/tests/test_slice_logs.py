"""Which host's output a stopped slice shows by default: read from what was recorded on its
LeaderWorkerSet when it was stopped (its pods are gone), without a cluster."""

from typing import Any

import pytest

from kinetic_pathways import PathwaysBackend
from kinetic_pathways.manifest import LWS_GROUP
from kinetic_pathways.status import FINAL_DETAIL, FINAL_STATE, log_tail_key
from kinetic_protocol import BackendSettings, JobRecord

TAILS = {0: "leader stopped with the slice\n", 1: "worker exits 2\n"}


class _StoppedSlice:
    """A connection that holds one stopped slice (``lws``) and none of its pods."""

    namespace = "research"
    api_client = object()  # discovery builds an API object on it, and calls nothing
    custom = type("Custom", (), {"get_namespaced_custom_object": None})()

    def __init__(self, lws: dict[str, Any]) -> None:
        self.lws = lws

    def read(self, doing: str, fn: Any, *args: Any, **kwargs: Any) -> dict[str, Any]:
        assert doing == "discovering API groups", doing
        return {"groups": [{"name": LWS_GROUP, "versions": [{"version": "v1"}]}]}

    def read_or_none(self, doing: str, fn: Any, *args: Any) -> dict[str, Any]:
        return self.lws

    def list_pods(self, selector: str) -> list[dict[str, Any]]:
        raise AssertionError("a stopped slice's output is read from what was recorded on it")


def _record() -> JobRecord:
    return JobRecord(
        job_id="train-1",
        backend="pathways",
        project="kinetic-tests",
        cluster_name="c",
        zone="us-central2-b",
        namespace="research",
        bucket_name="kinetic-tests-jobs",
        k8s_name="train-1",
        image_uri="python:3.11-slim",
        accelerator="tpu-v5litepod-2x4",
        func_name="train",
        display_name="train",
        created_at="2026-11-24T00:00:00+00:00",
    )


def _stopped(state: str, detail: str) -> PathwaysBackend:
    annotations = {FINAL_STATE: state, FINAL_DETAIL: detail}
    annotations |= {log_tail_key(host): text for host, text in TAILS.items()}
    lws = {"metadata": {"name": "train-1", "annotations": annotations}}
    settings = BackendSettings(project="kinetic-tests", namespace="research")
    return PathwaysBackend(settings, connection=_StoppedSlice(lws))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("state", "detail", "shown"),
    [("FAILED", "host 1 of 2: exit 2", 1), ("SUCCEEDED", "", 0), ("FAILED", "OOMKilled", 0)],
    ids=["a worker failed", "succeeded", "no host named"],
)
def test_a_stopped_slice_shows_the_host_whose_failure_stopped_it_by_default(
    state: str, detail: str, shown: int
) -> None:
    backend = _stopped(state, detail)
    assert backend.logs(_record()) == TAILS[shown]
    assert backend.logs(_record(), host=0) == TAILS[0]  # asked for by number: that host
