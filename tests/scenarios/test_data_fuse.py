"""``Data(..., fuse=True)`` on backends that mount it lazily: a read-only GCS FUSE CSI volume
scoped to the data's directory, which the real API server (and its Job or LeaderWorkerSet
controller) accepts. The node agent runs no CSI driver, so the pod waits in
``ContainerCreating`` as it would on a node without one; what is checked is the manifest the
cluster stored and the pods its controllers made from it. A cluster without the driver is
refused at submit."""

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import data_userfuncs as uf
import pytest
from data_support import capabilities, put_objects
from kubernetes import client
from kubernetes.client.exceptions import ApiException
from scenario_support import ScenarioBackend, wait_until

from kinetic import ConfigError, Data, JobHandle
from kinetic.backends import get_backend
from kinetic.config import resolve_settings
from kinetic_gke.labels import job_selector
from kinetic_protocol.data import GCSFUSE_DRIVER

# The backends that mount fuse=True data lazily; the others stage it up front (test_data_sources).
pytestmark = [pytest.mark.gcs, pytest.mark.backends("gke", "pathways")]

Obj = dict[str, Any]


@pytest.fixture
def fuse_backend(kinetic_backend: ScenarioBackend) -> ScenarioBackend:
    if not capabilities(kinetic_backend).fuse:
        pytest.skip(f"the {kinetic_backend.name} backend does not mount fuse=True data lazily")
    return kinetic_backend


def _storage(request: pytest.FixtureRequest) -> client.StorageV1Api:
    return client.StorageV1Api(request.getfixturevalue("real_k8s").api_client())


def _remove_driver(storage: client.StorageV1Api) -> None:
    try:
        storage.delete_csi_driver(GCSFUSE_DRIVER)
    except ApiException as exc:
        if exc.status != 404:
            raise


@pytest.fixture
def fuse_driver(fuse_backend: ScenarioBackend, request: pytest.FixtureRequest) -> Iterator[None]:
    """The CSIDriver object GKE's Cloud Storage FUSE add-on registers (cluster-wide)."""
    storage = _storage(request)
    body = {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "CSIDriver",
        "metadata": {"name": GCSFUSE_DRIVER},
        "spec": {
            "attachRequired": False,
            "podInfoOnMount": True,
            "volumeLifecycleModes": ["Persistent", "Ephemeral"],
        },
    }
    _remove_driver(storage)
    storage.create_csi_driver(body)
    yield
    _remove_driver(storage)


def _pod_template(backend: ScenarioBackend, job: JobHandle) -> tuple[Any, Obj]:
    settings = resolve_settings(backend=backend.name, quiet=True)
    built: Any = get_backend(backend.name, settings.backend_settings())
    stored = built.workload.get(built.connection, job.k8s_name)
    assert stored is not None, "the cluster holds the job's object"
    spec = stored["spec"]
    template = (
        spec["template"] if "template" in spec else spec["leaderWorkerTemplate"]["workerTemplate"]
    )
    return built, template


def _volumes(template: Obj) -> dict[str, Obj]:
    mounts = {m["name"]: m for m in template["spec"]["containers"][0]["volumeMounts"]}
    return {
        mounts[v["name"]]["mountPath"]: {**v, "mount": mounts[v["name"]]}
        for v in template["spec"]["volumes"]
    }


@pytest.mark.usefixtures("fuse_driver")
def test_fuse_data_becomes_read_only_csi_volumes_that_the_cluster_accepts(
    fuse_backend: ScenarioBackend, gcs_bucket: str, tmp_path: Path
) -> None:
    put_objects(gcs_bucket, {"sets/train/a.txt": "A", "weights/model.bin": "W"})
    local = tmp_path / "local-set"
    local.mkdir()
    (local / "b.txt").write_text("B")
    volumes = {"/weights": Data(f"{gcs_bucket}/weights/", fuse=True), "/scratch": Data(str(local))}
    remote = fuse_backend.decorate(volumes=volumes)(uf.read_paths)
    job = remote.run_async(
        Data(f"{gcs_bucket}/sets/train/", fuse=True), Data(str(local), fuse=True)
    )
    built, template = _pod_template(fuse_backend, job)
    assert template["metadata"]["annotations"]["gke-gcsfuse/volumes"] == "true"
    found = _volumes(template)
    bucket = gcs_bucket.removeprefix("gs://")
    [content_hash] = {key.split("/")[1] for key in fuse_backend.store().list("data/")}
    expected = {
        "/kinetic/fuse/0": (bucket, "sets/train"),
        "/kinetic/fuse/1": (bucket, f"data/{content_hash}/files"),
        "/weights": (bucket, "weights"),
    }
    for path, (bucket_name, directory) in expected.items():
        csi = found[path]["csi"]
        assert csi["driver"] == GCSFUSE_DRIVER
        assert csi["readOnly"] is True and found[path]["mount"]["readOnly"] is True
        assert csi["volumeAttributes"] == {
            "bucketName": bucket_name,
            "mountOptions": f"implicit-dirs,only-dir={directory}",
        }
    assert found["/scratch"]["emptyDir"] == {}, "data without fuse=True is downloaded"

    selector = job_selector(job.job_id, app=built.app)
    pods = wait_until(lambda: built.connection.list_pods(selector), "the controller's pods")
    assert all(_volumes(pod)["/weights"]["csi"]["driver"] == GCSFUSE_DRIVER for pod in pods)
    waiting = wait_until(
        lambda: [
            c["state"]["waiting"]["message"]
            for pod in built.connection.list_pods(selector)
            for c in (pod.get("status") or {}).get("containerStatuses") or []
            if "waiting" in (c.get("state") or {})
        ],
        "pods waiting on the CSI driver the node lacks",
    )
    assert GCSFUSE_DRIVER in waiting[0]
    job.cleanup()


def test_fuse_on_a_cluster_without_the_driver_is_refused_at_submit(
    fuse_backend: ScenarioBackend, gcs_bucket: str, request: pytest.FixtureRequest
) -> None:
    _remove_driver(_storage(request))
    remote = fuse_backend.decorate()(uf.read_paths)
    with pytest.raises(ConfigError, match="GcsFuseCsiDriver=ENABLED") as caught:
        remote.run_async(Data(f"{gcs_bucket}/sets/", fuse=True))
    assert "fuse=False" in str(caught.value), "the message names the alternative"
    assert fuse_backend.store().list("jobs/") == [], "nothing of the job is left in the store"


@pytest.mark.usefixtures("fuse_driver")
def test_a_fuse_volume_of_one_object_must_be_named_after_it(
    fuse_backend: ScenarioBackend, gcs_bucket: str
) -> None:
    volumes = {"/weights/w.bin": Data(f"{gcs_bucket}/weights/model.bin", fuse=True)}
    remote = fuse_backend.decorate(volumes=volumes)(uf.read_paths)
    with pytest.raises(ConfigError, match=r"appears as /weights/model\.bin"):
        remote.run_async("/weights/w.bin")
