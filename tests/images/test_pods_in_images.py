"""The node agent's kubelet runs a pod inside its locally built image, as a real one would.

A Kinetic-shaped pod (uid/gid 1000, ``fsGroup`` 1000, the signing keys from a Secret at
``kinetic_gke.k8s.signing.MOUNT_PATH`` with mode 0440) names the prebuilt cpu base image built
by buildah; the kubelet runs ``python -m kinetic_runtime`` in that image's root, and the job it
completes against fake-gcs-server reports the image's interpreter and runtime.
"""

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from image_jobs import IMAGE_SITE, PROBE, BucketJobs, BuildahImageBuilder, job_function
from kubernetes import client

from kinetic_gke.images import build_base_images
from kinetic_gke.k8s.signing import MOUNT_PATH
from kinetic_protocol import Succeeded, layout
from kinetic_testing.controlplane.cluster import ControlPlane
from kinetic_testing.fake_gcs import FakeGcsServer
from kinetic_testing.images.fixtures import ImageBuilds
from kinetic_testing.images.pods import LocalImages
from kinetic_testing.nodeagent import NodeAgent, base_host_env

pytestmark = [pytest.mark.images, pytest.mark.realk8s, pytest.mark.gcs, pytest.mark.slow]

_DONE_TIMEOUT_S = 240.0


@pytest.fixture
def in_image_agent(
    real_k8s: ControlPlane, image_builds: ImageBuilds, fake_gcs: FakeGcsServer, tmp_path: Path
) -> Iterator[tuple[NodeAgent, LocalImages]]:
    images = LocalImages(image_builds.buildah)
    env = base_host_env(os.environ)
    with NodeAgent(
        real_k8s.api_client, workdir=tmp_path / "nodes", host_env=env, images=images
    ) as agent:
        yield agent, images
        errors = list(agent.errors)
    assert errors == [], f"the node agent failed: {errors}"


def test_a_kinetic_pod_runs_its_job_inside_the_prebuilt_image_as_uid_1000(
    in_image_agent: tuple[NodeAgent, LocalImages],
    real_k8s: ControlPlane,
    k8s_namespace: str,
    image_builds: ImageBuilds,
    fake_gcs: FakeGcsServer,
    gcs_bucket: str,
    tmp_path: Path,
) -> None:
    _, images = in_image_agent
    builder = BuildahImageBuilder(image_builds)
    [uri] = build_base_images(["cpu"], "us-docker.pkg.dev/test/kinetic", None, builder)
    images.add(uri, builder.local_tags[uri])
    jobs = BucketJobs(gcs_bucket, fake_gcs.endpoint, tmp_path)
    job_id = jobs.stage(job_function(PROBE, "probe"))
    api = real_k8s.api_client()
    core = client.CoreV1Api(api)
    secret = {"metadata": {"name": "keys"}, "stringData": jobs.keyring.entries()}
    core.create_namespaced_secret(k8s_namespace, secret, _preload_content=False)  # type: ignore[arg-type]
    pod: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "job"},
        "spec": {
            "restartPolicy": "Never",
            "securityContext": {
                "runAsUser": 1000,
                "runAsGroup": 1000,
                "fsGroup": 1000,
                "runAsNonRoot": True,
            },
            "volumes": [{"name": "keys", "secret": {"secretName": "keys", "defaultMode": 0o440}}],
            "containers": [
                {
                    "name": "main",
                    "image": uri,
                    "command": ["python", "-m", "kinetic_runtime"],
                    "args": ["--store", gcs_bucket, "--job", job_id, "--workdir", f"/tmp/{job_id}"],
                    "env": [{"name": "KINETIC_SIGNING_KEYS", "value": MOUNT_PATH}],
                    "volumeMounts": [{"name": "keys", "mountPath": MOUNT_PATH, "readOnly": True}],
                }
            ],
        },
    }
    core.create_namespaced_pod(k8s_namespace, pod, _preload_content=False)  # type: ignore[arg-type]
    phase = _wait_for_end(core, k8s_namespace)
    log = core.read_namespaced_pod_log("job", k8s_namespace)
    api.close()
    assert phase == "Succeeded", log
    run = jobs.run_result(job_id)
    assert isinstance(run, Succeeded)
    found = job_value(run)
    assert (found["uid"], found["gid"]) == (1000, 1000)
    assert found["python"] == "/opt/venv/bin/python"
    assert found["runtime"] == f"{IMAGE_SITE}/kinetic_runtime"
    assert jobs.store.exists(layout.result_key(job_id))


def job_value(envelope: Succeeded) -> dict[str, Any]:
    import cloudpickle

    value: dict[str, Any] = cloudpickle.loads(envelope.value)
    return value


def _wait_for_end(core: client.CoreV1Api, namespace: str) -> str:
    """The pod's terminal phase, watched (no polling sleeps) up to a deadline."""
    from kubernetes import watch

    stream = watch.Watch().stream(  # type: ignore[no-untyped-call]
        core.list_namespaced_pod,
        namespace,
        field_selector="metadata.name=job",
        timeout_seconds=int(_DONE_TIMEOUT_S),
    )
    for event in stream:
        phase = str(event["object"].status.phase or "")
        if phase in ("Succeeded", "Failed"):
            return phase
    raise AssertionError(f"the pod did not finish in {_DONE_TIMEOUT_S}s")
