"""Fixtures for the node agent tests: an agent per test on the session's real control plane.

``h`` is a small harness over the official client (plain dicts, ``_preload_content=False``)
scoped to the test's own namespace; ``h.wait`` polls a condition instead of sleeping.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from kinetic_testing.controlplane.cluster import ControlPlane
from kinetic_testing.nodeagent import NodeAgent, base_host_env

T = TypeVar("T")
Obj = dict[str, Any]


def _json(response: Any) -> Obj:
    return json.loads(response.data)


class Harness:
    """API helpers bound to one namespace."""

    def __init__(self, api: client.ApiClient, namespace: str) -> None:
        self.api = api
        self.ns = namespace
        self.core = client.CoreV1Api(api)
        self.batch = client.BatchV1Api(api)
        self.custom = client.CustomObjectsApi(api)

    @staticmethod
    def wait(check: Callable[[], T | None], timeout: float = 20.0, what: str = "") -> T:
        """Poll ``check`` until it returns something truthy; fail after ``timeout`` s."""
        deadline = time.monotonic() + timeout
        last: Any = None
        while time.monotonic() < deadline:
            last = check()
            if last:
                return last
            time.sleep(0.05)
        raise AssertionError(f"timed out after {timeout}s waiting for {what}: last {last!r}")

    def create_job(
        self,
        name: str,
        code: str,
        *,
        backoff_limit: int = 0,
        ttl: int | None = None,
        pod_spec: Obj | None = None,
        container: Obj | None = None,
    ) -> str:
        """A Job whose one container runs ``python -c code``."""
        main = {"name": "main", "image": "python:3.11-slim", "command": ["python", "-c", code]}
        spec: Obj = {"restartPolicy": "Never", "containers": [{**main, **(container or {})}]}
        spec.update(pod_spec or {})
        job: Obj = {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": name},
            "spec": {"backoffLimit": backoff_limit, "template": {"spec": spec}},
        }
        if ttl is not None:
            job["spec"]["ttlSecondsAfterFinished"] = ttl
        self.batch.create_namespaced_job(self.ns, job, _preload_content=False)
        return name

    def create_pod(self, name: str, spec: Obj, labels: Obj | None = None) -> str:
        meta = {"name": name, "labels": labels or {}}
        body = {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}
        self.core.create_namespaced_pod(self.ns, body, _preload_content=False)
        return name

    def job(self, name: str) -> Obj | None:
        try:
            return _json(self.batch.read_namespaced_job(name, self.ns, _preload_content=False))
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise

    def pod(self, name: str) -> Obj | None:
        try:
            return _json(self.core.read_namespaced_pod(name, self.ns, _preload_content=False))
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise

    def pods(self, selector: str = "") -> list[Obj]:
        raw = self.core.list_namespaced_pod(
            self.ns, label_selector=selector, _preload_content=False
        )
        return list(_json(raw)["items"])

    def job_pods(self, job: str) -> list[Obj]:
        return self.pods(f"batch.kubernetes.io/job-name={job}")

    def job_condition(self, name: str, kind: str) -> Obj | None:
        job = self.job(name)
        for cond in (job or {}).get("status", {}).get("conditions") or []:
            if cond["type"] == kind and cond["status"] == "True":
                return dict(cond)
        return None

    def only_pod(self, job: str, phase: str | None = None) -> Obj | None:
        """The Job's single pod once it exists (and is in ``phase``, if given)."""
        pods = self.job_pods(job)
        if len(pods) != 1:
            return None
        if phase is not None and pods[0].get("status", {}).get("phase") != phase:
            return None
        return pods[0]

    def logs(self, pod: str, **kwargs: Any) -> str:
        text: str = self.core.read_namespaced_pod_log(pod, self.ns, **kwargs)
        return text


@pytest.fixture
def agent(real_k8s: ControlPlane, tmp_path: Path) -> Iterator[NodeAgent]:
    """A node agent with the default GKE-like nodes; the test fails if the agent logged errors."""
    env = base_host_env(os.environ)
    with NodeAgent(real_k8s.api_client, workdir=tmp_path / "agent", host_env=env) as node_agent:
        yield node_agent
        errors = list(node_agent.errors)
    assert errors == [], f"node agent errors: {errors}"


@pytest.fixture
def h(real_k8s: ControlPlane, k8s_namespace: str) -> Iterator[Harness]:
    api = real_k8s.api_client()
    yield Harness(api, k8s_namespace)
    api.close()
