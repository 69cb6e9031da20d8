"""The pre-flight check on submit, against the real control plane (the node agent's nodes carry
GKE's labels) and the GKE API fake for pools scaled to zero and auto-provisioning."""

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from gke_test_support import PROJECT, BackendFactory

from kinetic_protocol import ConfigError, PrepareRequest, parse_accelerator
from kinetic_testing.gcp_fake import FakeGoogleCloud

pytestmark = pytest.mark.realk8s


@pytest.fixture
def gke_api(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeGoogleCloud]:
    with FakeGoogleCloud() as fake:
        monkeypatch.setenv("KINETIC_GCP_API_ENDPOINT", fake.url)
        yield fake


def _request(name: str, *, spot: bool = False) -> PrepareRequest:
    return PrepareRequest(
        accelerator=parse_accelerator(name),
        project_root=Path("."),
        spot=spot,
        container_image="us-docker.pkg.dev/p/r/img:1",  # a custom image: nothing to build
    )


def _cluster(fake: FakeGoogleCloud, pools: list[dict[str, object]], nap: dict[str, object]) -> None:
    fake.add_cluster(
        PROJECT,
        "us-central1-a",
        {"name": "kinetic-cluster", "nodePools": pools, "autoscaling": nap},
    )


def test_a_node_that_offers_it_passes_without_asking_gke(
    make_backend: BackendFactory, gke_api: FakeGoogleCloud
) -> None:
    make_backend().prepare(_request("gpu-l4"))
    assert gke_api.calls == []


def test_no_pool_and_no_autoprovisioning_fails_at_once_with_the_pool_add_command(
    make_backend: BackendFactory, gke_api: FakeGoogleCloud
) -> None:
    _cluster(gke_api, [{"name": "cpu", "config": {"machineType": "e2-standard-4"}}], {})
    with pytest.raises(ConfigError) as caught:
        make_backend().prepare(_request("gpu-h100"))
    assert "kinetic pool add --accelerator gpu-h100" in str(caught.value)


def test_a_missing_pool_is_refused_before_any_image_is_resolved_or_built(
    make_backend: BackendFactory, gke_api: FakeGoogleCloud, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A first job must not wait for an image build to be told to add a pool: with no image
    chosen (a bundled build) the refusal comes before the image code is even imported."""
    _cluster(gke_api, [{"name": "cpu", "config": {"machineType": "e2-standard-4"}}], {})
    monkeypatch.setitem(sys.modules, "kinetic_gke.images", None)  # any import of it fails
    request = PrepareRequest(accelerator=parse_accelerator("gpu-h100"), project_root=Path("."))
    with pytest.raises(ConfigError, match="kinetic pool add --accelerator gpu-h100"):
        make_backend().prepare(request)


def test_a_pool_scaled_to_zero_or_autoprovisioning_lets_it_through(
    make_backend: BackendFactory, gke_api: FakeGoogleCloud
) -> None:
    zero = {
        "name": "h100",
        "config": {
            "machineType": "a3-highgpu-1g",
            "accelerators": [{"acceleratorType": "nvidia-h100-80gb", "acceleratorCount": "1"}],
        },
        "autoscaling": {"enabled": True, "minNodeCount": 0, "maxNodeCount": 2},
    }
    nap = {
        "enableNodeAutoprovisioning": True,
        "resourceLimits": [{"resourceType": "nvidia-tesla-t4", "maximum": "4"}],
    }
    _cluster(gke_api, [zero], nap)
    backend = make_backend()
    backend.prepare(_request("gpu-h100"))
    backend.prepare(_request("gpu-t4-x2"))
    with pytest.raises(ConfigError, match="--spot"):
        backend.prepare(_request("gpu-h100", spot=True))


def test_without_permission_to_read_the_cluster_it_warns_once_and_submits(
    make_backend: BackendFactory, gke_api: FakeGoogleCloud, caplog: pytest.LogCaptureFixture
) -> None:
    gke_api.fail("container.clusters.get", code=403, message="container.clusters.get denied")
    backend = make_backend()
    backend.prepare(_request("gpu-h100"))
    backend.prepare(_request("gpu-h100"))
    warnings = [r for r in caplog.records if "could not check" in r.getMessage()]
    assert len(warnings) == 1 and "permission denied" in warnings[0].getMessage()
    assert gke_api.count("container.clusters.get") == 1  # cached per backend, so per process
