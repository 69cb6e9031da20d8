"""Third-party Kubernetes manifests installed from a pinned, checksum-verified source.

A pin names a release, where its manifest is, and the sha256 of the exact bytes. The manifest
is fetched, its checksum checked before anything is applied, and every object is applied
server-side (field manager ``kinetic``), so installing twice changes nothing.

The source and checksum of each pin can be replaced (``KINETIC_LWS_MANIFEST`` and
``KINETIC_LWS_MANIFEST_SHA256``; the same for the GPU driver installer), for a mirror, an
air-gapped cluster, or tests. A pin without a checksum is never applied: the command to install
it by hand is shown instead.
"""

from __future__ import annotations

import hashlib
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kinetic import settings as declared
from kinetic_gke.k8s import ClusterConnection
from kinetic_protocol import ConfigError
from kinetic_protocol.settings import SettingSpec

__all__ = ["GPU_DRIVER", "LWS", "PinnedManifest", "apply_manifest", "fetch"]

_FETCH_TIMEOUT = 60


@dataclass(frozen=True)
class PinnedManifest:
    name: str
    version: str
    url: str
    sha256: str
    """Empty when no checksum is pinned for this release: then it is not applied."""
    source_setting: SettingSpec
    checksum_setting: SettingSpec

    def resolved(self) -> tuple[str, str]:
        """Where to fetch it and the checksum it must have (settings override the pin)."""
        return (
            self.source_setting.from_env() or self.url,
            self.checksum_setting.from_env() or self.sha256,
        )

    @property
    def manual_command(self) -> str:
        return f"kubectl apply --server-side -f {self.resolved()[0]}"


LWS = PinnedManifest(
    "LeaderWorkerSet",
    "v0.8.0",
    "https://github.com/kubernetes-sigs/lws/releases/download/v0.8.0/manifests.yaml",
    "",  # the release's checksum is to be pinned here once verified (see docs)
    declared.LWS_MANIFEST,
    declared.LWS_MANIFEST_SHA256,
)
GPU_DRIVER = PinnedManifest(
    "NVIDIA driver installer",
    "cos-preloaded",
    "https://raw.githubusercontent.com/GoogleCloudPlatform/container-engine-accelerators/"
    "master/nvidia-driver-installer/cos/daemonset-preloaded.yaml",
    "",
    declared.GPU_DRIVER_MANIFEST,
    declared.GPU_DRIVER_MANIFEST_SHA256,
)


def fetch(pin: PinnedManifest) -> bytes:
    """The manifest's bytes, after its checksum is verified; a ConfigError otherwise."""
    source, expected = pin.resolved()
    if not expected:
        raise ConfigError(
            f"No checksum is pinned for {pin.name} {pin.version}, so Kinetic will not install "
            f"it unverified. Install it yourself: `{pin.manual_command}`, or set "
            f"{pin.checksum_setting.env} to the sha256 of the manifest you trust."
        )
    try:
        if "://" in source and not source.startswith("file://"):
            with urllib.request.urlopen(source, timeout=_FETCH_TIMEOUT) as response:  # noqa: S310
                data: bytes = response.read()
        else:
            data = Path(source.removeprefix("file://")).read_bytes()
    except OSError as exc:
        raise ConfigError(f"Cannot fetch the {pin.name} manifest from {source}: {exc}") from exc
    actual = hashlib.sha256(data).hexdigest()
    if actual != expected.lower():
        raise ConfigError(
            f"The {pin.name} manifest from {source} has sha256 {actual}, not the pinned "
            f"{expected}. Nothing was applied. Check the source (or the pin in "
            f"{pin.checksum_setting.env})."
        )
    return data


def _documents(data: bytes) -> list[dict[str, Any]]:
    import yaml  # type: ignore[import-untyped]

    return [doc for doc in yaml.safe_load_all(data) if isinstance(doc, dict) and doc.get("kind")]


def apply_manifest(connection: ClusterConnection, data: bytes) -> list[str]:
    """Apply every object server-side; returns ``Kind/name`` of each, in order."""
    from kubernetes.dynamic import DynamicClient

    dynamic = DynamicClient(connection.api_client)  # type: ignore[no-untyped-call]
    applied = []
    for document in _documents(data):
        kind, name = document["kind"], document["metadata"]["name"]
        resource = dynamic.resources.get(api_version=document["apiVersion"], kind=kind)
        namespace = document["metadata"].get("namespace") if resource.namespaced else None
        connection.call(
            f"applying {kind} {name}",
            dynamic.server_side_apply,
            resource,
            body=document,
            name=name,
            namespace=namespace,
            field_manager="kinetic",
            force_conflicts=True,
        )
        applied.append(f"{kind}/{name}")
    return applied
