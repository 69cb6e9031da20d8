"""Fixtures for the Kubernetes simulator's own tests."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from kinetic_testing.k8s import KubernetesSimulator
from kinetic_testing.k8s.fixtures import k8s_sim  # noqa: F401

JobFactory = Callable[..., dict[str, Any]]


@dataclass
class Kube:
    """The official client's API groups, bound to the simulator."""

    sim: KubernetesSimulator
    batch: Any
    core: Any
    custom: Any


@pytest.fixture
def kube(k8s_sim: KubernetesSimulator) -> Iterator[Kube]:  # noqa: F811
    with k8s_sim.api_client() as api:
        yield Kube(
            k8s_sim, client.BatchV1Api(api), client.CoreV1Api(api), client.CustomObjectsApi(api)
        )


def python_job(
    name: str,
    code: str,
    *,
    labels: dict[str, str] | None = None,
    backoff_limit: int = 0,
    env: list[dict[str, Any]] | None = None,
    **spec: Any,
) -> dict[str, Any]:
    """A Job manifest whose single container runs `python -c code` with this interpreter."""
    container: dict[str, Any] = {
        "name": "main",
        "image": "python:3.11-slim",
        "command": [sys.executable, "-c", code],
    }
    if env:
        container["env"] = env
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "labels": labels or {}},
        "spec": {
            "backoffLimit": backoff_limit,
            "template": {
                "metadata": {"labels": labels or {}},
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [container],
                    "terminationGracePeriodSeconds": 1,
                },
            },
            **spec,
        },
    }


@pytest.fixture
def make_job() -> JobFactory:
    return python_job


#: A command that announces itself and then runs until killed.
LOOP = "import time\nprint('started', flush=True)\nwhile True:\n    time.sleep(0.05)\n"


@pytest.fixture
def loop_code() -> str:
    return LOOP


def condition(obj: dict[str, Any], kind: str) -> dict[str, Any] | None:
    """The condition of `kind` on a snapshot's status, if it is True."""
    for cond in (obj.get("status") or {}).get("conditions") or []:
        if cond["type"] == kind and cond["status"] == "True":
            return dict(cond)
    return None


@pytest.fixture
def true_condition() -> Callable[[dict[str, Any], str], dict[str, Any] | None]:
    return condition


def pid_alive(pid: int) -> bool:
    """Whether `pid` is a live process (a zombie counts as dead)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


@pytest.fixture
def alive() -> Callable[[int], bool]:
    return pid_alive
