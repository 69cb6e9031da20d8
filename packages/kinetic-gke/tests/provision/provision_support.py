"""Names shared by the provisioning tests (imported by name; conftest puts this directory on
``sys.path``)."""

import base64
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result

PROJECT = "kp-test"
ZONE = "us-central1-a"
Invoke = Callable[..., Result]
_MUTATIONS = (".create", ".enable", ".setIam", ".update", ".delete")


def ok(result: Any) -> str:
    """The command's stdout, once it is known to have succeeded."""
    assert result.exit_code == 0, f"{result.output}\n{result.stderr if result.stderr_bytes else ''}"
    return str(result.stdout)


def mutations(calls: list[str]) -> list[str]:
    """The calls among ``calls`` (route names of the Google Cloud fake) that change something."""
    return [call for call in calls if call.endswith(_MUTATIONS)]


def add_unmanaged_gpu_pool(cloud: Any, cluster: str) -> None:
    """A GPU pool made outside Kinetic, whose NVIDIA driver GKE does not install."""
    found = cloud.container.clusters[f"projects/{PROJECT}/locations/{ZONE}/clusters/{cluster}"]
    found["nodePools"].append({
        "name": "old-gpus", "status": "RUNNING", "initialNodeCount": 1,
        "config": {"machineType": "g2-standard-4",
                   "accelerators": [{"acceleratorType": "nvidia-l4", "acceleratorCount": "1"}]},
    })  # fmt: skip


QUICK_POLLS = ("KINETIC_GKE_POLL", "0.05,0.5")
"""The fake's operations end on their second read: at Google's own pace, each wait for one
slept up to a second first."""


def point_gke_at(cloud: Any, plane: Any, endpoint: str, token: str, adc: Path) -> None:
    """New clusters of ``cloud`` (a FakeGoogleCloud) report ``endpoint`` and ``plane``'s CA;
    the Google credentials written to ``adc`` (for ``GOOGLE_APPLICATION_CREDENTIALS``) yield
    ``token``."""
    cloud.container.endpoint = endpoint
    cloud.container.ca_certificate = base64.b64encode(plane.pki.ca_cert.read_bytes()).decode()
    cloud.apis.access_token = token
    cloud.apis.credentials_file(adc)


def point_kinetic_at(
    settings: pytest.MonkeyPatch,
    cloud: Any,
    plane: Any,
    endpoint: str,
    token: str,
    tmp: Path,
    *,
    cluster: str,
    namespace: str,
) -> None:
    """Settings for `kinetic up` and friends: ``cloud`` (a FakeGoogleCloud, already named by
    ``KINETIC_GCP_API_ENDPOINT``) whose clusters are ``plane`` at ``endpoint``, files of their
    own under ``tmp``, and no kubeconfig (`up` needs none)."""
    for name in list(os.environ):
        if name.startswith("KINETIC_") and name != "KINETIC_GCP_API_ENDPOINT":
            settings.delenv(name)
    adc = tmp / "adc.json"
    point_gke_at(cloud, plane, endpoint, token, adc)
    settings.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(adc))
    settings.setenv("KUBECONFIG", str(tmp / "no-kubeconfig"))
    settings.setenv("KINETIC_PROFILES_FILE", str(tmp / "profiles.json"))
    settings.setenv("KINETIC_HOME", str(tmp / "home"))
    settings.setenv("KINETIC_PROJECT", PROJECT)
    settings.setenv("KINETIC_ZONE", ZONE)
    settings.setenv("KINETIC_CLUSTER", cluster)
    settings.setenv("KINETIC_NAMESPACE", namespace)
    settings.setenv(*QUICK_POLLS)


def write_kubeconfig(plane: Any, cluster: str, path: Path) -> Path:
    """The kubeconfig `gcloud container clusters get-credentials` would have written for
    ``cluster``: the context Kinetic's backends (and `doctor`) use, named as gcloud names it."""
    from kinetic_gke.k8s import kube_context_name

    document = json.loads(plane.kubeconfig.read_text())
    name = kube_context_name(PROJECT, ZONE, cluster)
    document["current-context"] = name
    document["contexts"][0]["name"] = name
    path.write_text(json.dumps(document))
    return path


KUEUE_API = "/apis/kueue.x-k8s.io/v1beta2"


def remove_kinetic_queues(plane: Any) -> None:
    """Delete the cluster-wide Kueue objects Kinetic made on ``plane`` (its label says so);
    the session's own queues carry no such label and stay."""
    for plural in (
        "clusterqueues", "admissionchecks", "provisioningrequestconfigs", "resourceflavors",
        "workloadpriorityclasses",
    ):  # fmt: skip
        listing = plane.request("GET", f"{KUEUE_API}/{plural}?labelSelector=managed-by%3Dkinetic")
        for item in listing["items"]:
            if not item["metadata"].get("deletionTimestamp"):
                plane.request("DELETE", f"{KUEUE_API}/{plural}/{item['metadata']['name']}")
