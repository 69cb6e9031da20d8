"""Kinetic jobs through the client, on the real control plane, inside images that the fake
Cloud Build API built with buildah.

A gke job with ``container_image="bundled"`` and a small PyPI requirement goes through the
real ``google-cloud-build`` client (``KINETIC_GCP_API_ENDPOINT``), the fake API's buildah
build, and the fake registry; the node agent runs its pod in that image as uid 1000. A 2-host
pathways job then names the same image (one build for the module) and both hosts run in it.
"""

import importlib
import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from image_jobs import IMAGE_SITE, PROBE

import kinetic
from kinetic_gke.k8s import ClusterConnection
from kinetic_gke.provision.slice_role import apply_slice_role
from kinetic_testing.cloudbuild_fake import FakeCloudBuild
from kinetic_testing.controlplane.cluster import ControlPlane
from kinetic_testing.images.pods import LocalImages
from kinetic_testing.nodeagent import NodeAgent, base_host_env

pytestmark = [pytest.mark.images, pytest.mark.realk8s, pytest.mark.gcs, pytest.mark.slow]

USER_REQUIREMENT = "six==1.16.0"
SLICE = "tpu-v5litepod-2x4"
"""A 2-host TPU slice: pathways runs a LeaderWorkerSet of two pods."""
HOST_LINE = """
def host_line():
    import json, os, sys
    from pathlib import Path

    import kinetic_runtime

    line = {"host": os.environ.get("KINETIC_HOST_INDEX"), "uid": os.getuid(),
            "python": sys.executable, "runtime": str(Path(kinetic_runtime.__file__).parent)}
    print("HOST " + json.dumps(line), flush=True)
    return line
"""
"""Each host prints where it runs (the leader's line is the job's value)."""


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The user's project: a requirement, and the job functions' module (shipped in the
    code bundle; one content for the module, so one image)."""
    root = tmp_path_factory.mktemp("image-project")
    (root / "requirements.txt").write_text(f"{USER_REQUIREMENT}\n")
    (root / "image_probe.py").write_text(PROBE + HOST_LINE)
    return root


@pytest.fixture
def cluster_in_images(
    real_k8s: ControlPlane,
    k8s_namespace: str,
    gcs_bucket: str,
    local_images: LocalImages,
    buildah_cloud_build: FakeCloudBuild,
    clean_kinetic_env: Path,
    project: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[NodeAgent]:
    """The gke backend on this test's namespace, building through the fake Cloud Build; the
    node agent runs pods in the images it built."""
    kubeconfig = tmp_path / "kubeconfig"
    shutil.copyfile(real_k8s.kubeconfig, kubeconfig)
    for key, value in {
        "KUBECONFIG": str(kubeconfig),
        "KINETIC_KUBE_CONTEXT": real_k8s.context,
        "KINETIC_NAMESPACE": k8s_namespace,
        "KINETIC_STORE": gcs_bucket,
        "KINETIC_PROJECT": "kinetic-images",
        "KINETIC_GKE_POLL": "0.05,0.5",
        "KINETIC_GCP_API_ENDPOINT": buildah_cloud_build.url,
    }.items():
        monkeypatch.setenv(key, value)
    monkeypatch.syspath_prepend(str(project))
    apply_slice_role(
        ClusterConnection(real_k8s.api_client(), k8s_namespace), k8s_namespace, "default"
    )
    with NodeAgent(
        real_k8s.api_client,
        workdir=tmp_path / "nodes",
        host_env=base_host_env(os.environ),
        images=local_images,
    ) as agent:
        yield agent
        errors = list(agent.errors)
    assert errors == [], f"the node agent failed: {errors}"


def _probe_module() -> Any:
    return importlib.import_module("image_probe")


def test_a_bundled_gke_job_runs_in_its_built_image_as_uid_1000_with_its_requirement(
    cluster_in_images: NodeAgent, buildah_cloud_build: FakeCloudBuild
) -> None:
    builds = buildah_cloud_build.create_calls
    remote = kinetic.run(accelerator="cpu", backend="gke", container_image="bundled")
    found = remote(_probe_module().probe)()
    assert (found["uid"], found["gid"]) == (1000, 1000)
    assert found["python"] == "/opt/venv/bin/python"
    assert found["six"] == f"{IMAGE_SITE}/six.py"
    assert found["runtime"] == f"{IMAGE_SITE}/kinetic_runtime"
    assert buildah_cloud_build.create_calls <= builds + 1  # built now, or by an earlier test
    again = remote(_probe_module().probe)()
    assert again == found
    assert buildah_cloud_build.create_calls <= builds + 1  # the registry knew the tag


def test_a_two_host_pathways_job_runs_both_hosts_in_the_built_image(
    cluster_in_images: NodeAgent,
    buildah_cloud_build: FakeCloudBuild,
    tmp_path: Path,
) -> None:
    bundled = kinetic.run(accelerator="cpu", backend="gke", container_image="bundled")
    job = bundled(_probe_module().probe).run_async()
    job.result(timeout=600)
    image = job.image_uri  # built by the test before, or now: one image for the module
    assert image in _built_images(buildah_cloud_build)
    on_slice = kinetic.run(accelerator=SLICE, backend="pathways", container_image=image)
    leader = on_slice(_probe_module().host_line).run_async()
    value = leader.result(timeout=600, cleanup=False)
    assert value["host"] == "0" and value["uid"] == 1000
    lines = _host_lines(tmp_path / "nodes")
    assert sorted(line["host"] for line in lines) == ["0", "1"], lines
    for line in lines:
        assert (line["uid"], line["python"]) == (1000, "/opt/venv/bin/python"), line
        assert line["runtime"] == f"{IMAGE_SITE}/kinetic_runtime", line


def _built_images(fake: FakeCloudBuild) -> list[str]:
    return sorted({uri for request in fake.create_requests for uri in request.get("images", [])})


def _host_lines(node_workdir: Path) -> list[dict[str, Any]]:
    """The ``HOST`` line each pod printed, from the logs the node agent keeps on disk (the
    slice's pods are gone once the job ends)."""
    lines = []
    for log in sorted(node_workdir.glob("pods/*/*.log*")):
        text = log.read_text(errors="replace")
        lines += [json.loads(line[5:]) for line in text.splitlines() if line.startswith("HOST ")]
    return lines
