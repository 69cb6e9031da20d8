"""Third-party Kubernetes manifests Kinetic installs, pinned by checksum.

The LeaderWorkerSet, Kueue and JobSet releases ship inside this package
(``data/lws-<version>.yaml``, ``data/kueue-<version>.yaml``, ``data/jobset-<version>.yaml``),
rendered from their pinned sources by ``tools/lws_manifest.py``, ``tools/kueue_manifest.py`` and
``tools/jobset_manifest.py``, which also check the sha256 pinned here; installing them needs no
network. Before anything is applied the bytes are checked against the pinned sha256, and
every object is applied server-side (field manager ``kinetic``), so installing twice changes
nothing.

A source can be replaced (``KINETIC_LWS_MANIFEST``: a URL or a file, with the sha256 it must
have in ``KINETIC_LWS_MANIFEST_SHA256``; the same for Kueue, JobSet and the GPU driver
installer), for a mirror or a newer release. No NVIDIA driver installer ships (its publisher's
repository cannot be fetched where this package is built), so that one installs only from such
an override.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import hashlib
import os
import shutil
import tempfile
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from kinetic_gke import settings as declared
from kinetic_gke.k8s import ClusterConnection, NotFound
from kinetic_protocol import ConfigError
from kinetic_protocol.settings import SettingSpec

__all__ = [
    "GPU_DRIVER",
    "JOBSET",
    "KUEUE",
    "LWS",
    "PinnedManifest",
    "apply_manifest",
    "apply_objects",
    "unfinished_install",
]

_FETCH_TIMEOUT = 60


@dataclass(frozen=True)
class PinnedManifest:
    name: str
    version: str
    packaged: str
    """The file in ``kinetic_gke/provision/data`` that holds it; empty when none ships."""
    sha256: str
    """The sha256 of the packaged file."""
    upstream: str
    """Where its publisher serves it, for people installing it by hand."""
    source_setting: SettingSpec
    checksum_setting: SettingSpec

    @property
    def available(self) -> bool:
        """Whether ``load`` has something to load (a packaged file, or an override)."""
        return bool(self.packaged or self.source_setting.from_env())

    @property
    def source(self) -> str:
        """Where it is loaded from: the override, else the packaged file, else upstream."""
        override = self.source_setting.from_env()
        if override:
            return override
        if self.packaged:
            return str(resources.files("kinetic_gke.provision").joinpath("data", self.packaged))
        return self.upstream

    @property
    def manual_command(self) -> str:
        return f"kubectl apply --server-side -f {self.source}"

    def load(self) -> bytes:
        """The manifest's bytes, once their sha256 is the pinned one; a ConfigError otherwise
        (nothing is applied)."""
        override = self.source_setting.from_env()
        expected = self.checksum_setting.from_env()
        if override and not expected:
            raise ConfigError(
                f"{self.source_setting.env}={override} needs the sha256 that manifest must have "
                f"in {self.checksum_setting.env}: Kinetic applies nothing unverified."
            )
        if expected and not override:
            raise ConfigError(
                f"{self.checksum_setting.env} is set but {self.source_setting.env} is not: the "
                f"checksum is for a manifest you name there. Unset it to use the {self.name} "
                f"{self.version} that ships with Kinetic."
            )
        if not self.available:
            raise ConfigError(
                f"No {self.name} manifest ships with Kinetic. Install it yourself "
                f"(`{self.manual_command}`), or set {self.source_setting.env} and "
                f"{self.checksum_setting.env} to a manifest you trust and its sha256."
            )
        data = _read(self.source, self.name)
        expected = (expected or self.sha256).lower()
        actual = hashlib.sha256(data).hexdigest()
        if actual != expected:
            raise ConfigError(
                f"The {self.name} manifest at {self.source} has sha256 {actual}, not the pinned "
                f"{expected}, so nothing was applied. Check where it came from"
                + (f" (or the checksum in {self.checksum_setting.env})." if override else ".")
            )
        return data


def _read(source: str, name: str) -> bytes:
    try:
        if source.startswith(("http://", "https://")):
            with urllib.request.urlopen(source, timeout=_FETCH_TIMEOUT) as response:  # noqa: S310
                data: bytes = response.read()
                return data
        return Path(source.removeprefix("file://")).read_bytes()
    except OSError as exc:
        raise ConfigError(f"Cannot read the {name} manifest from {source}: {exc}") from exc


LWS = PinnedManifest(
    "LeaderWorkerSet",
    "v0.8.0",
    "lws-v0.8.0.yaml",
    "66416a375610ce31be69818f7ca02ed89887ce76e1034ad23addbc39e9c6854a",
    "https://github.com/kubernetes-sigs/lws/releases/download/v0.8.0/manifests.yaml",
    declared.LWS_MANIFEST,
    declared.LWS_MANIFEST_SHA256,
)
KUEUE = PinnedManifest(
    "Kueue",
    "v0.17.0",
    "kueue-v0.17.0.yaml",
    "cb6b837a1d9520d6d53ff7bcb70b593280eedf699efdec59ae3a713f8a90f83d",
    "https://github.com/kubernetes-sigs/kueue/releases/download/v0.17.0/manifests.yaml",
    declared.KUEUE_MANIFEST,
    declared.KUEUE_MANIFEST_SHA256,
)
JOBSET = PinnedManifest(
    "JobSet",
    "v0.11.1",
    "jobset-v0.11.1.yaml",
    "e882f6e4cfcded06814c298898055927e9b55def76fbfb3978045501e970c275",
    "https://github.com/kubernetes-sigs/jobset/releases/download/v0.11.1/manifests.yaml",
    declared.JOBSET_MANIFEST,
    declared.JOBSET_MANIFEST_SHA256,
)
GPU_DRIVER = PinnedManifest(
    "NVIDIA driver installer",
    "cos-preloaded",
    "",
    "",
    "https://raw.githubusercontent.com/GoogleCloudPlatform/container-engine-accelerators/"
    "master/nvidia-driver-installer/cos/daemonset-preloaded.yaml",
    declared.GPU_DRIVER_MANIFEST,
    declared.GPU_DRIVER_MANIFEST_SHA256,
)


def _documents(data: bytes) -> list[dict[str, Any]]:
    import yaml  # type: ignore[import-untyped]

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml: 1.3 MB in 0.1 s, not 1 s
    documents = yaml.load_all(data, Loader=loader)
    return [doc for doc in documents if isinstance(doc, dict) and doc.get("kind")]


def _where(dynamic: Any, document: dict[str, Any]) -> tuple[Any, str, str | None]:
    """The API resource of ``document``, its name, and its namespace (None: cluster-wide)."""
    resource = dynamic.resources.get(api_version=document["apiVersion"], kind=document["kind"])
    namespace = document["metadata"].get("namespace") if resource.namespaced else None
    return resource, document["metadata"]["name"], namespace


@functools.cache
def _discovery_dir() -> str:
    """A directory of this process's own (0700) for API discovery caches, removed at exit."""
    private = tempfile.mkdtemp(prefix="kinetic-discovery-")
    atexit.register(shutil.rmtree, private, ignore_errors=True)
    return private


@contextlib.contextmanager
def _dynamic(connection: ClusterConnection) -> Iterator[Any]:
    """The kubernetes client's DynamicClient. Its discovery cache (one file per API server)
    lives in a private directory of this process, not the shared temporary directory any
    local user could write, and is reused by every install and check the process makes: a
    full discovery costs about a second. A resource missing from the cache (one installed
    since) makes the client discover again."""
    from kubernetes.dynamic import DynamicClient

    server = hashlib.sha256(str(connection.api_client.configuration.host).encode()).hexdigest()
    cache = os.path.join(_discovery_dir(), f"{server[:16]}.json")
    yield DynamicClient(connection.api_client, cache_file=cache)  # type: ignore[no-untyped-call]


def unfinished_install(connection: ClusterConnection, data: bytes) -> bool:
    """Whether an install of ``data`` by Kinetic stopped half-way: its first object is there,
    applied by Kinetic, and its last is not (objects are applied in order)."""
    with _dynamic(connection) as dynamic:
        return _unfinished(connection, dynamic, _first_and_last(data))


_METADATA_ONLY = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"


@functools.lru_cache(maxsize=4)
def _first_and_last(data: bytes) -> tuple[dict[str, Any], dict[str, Any]]:
    """Kept: Kueue's manifest takes about 0.15 s to parse, and ``kinetic up`` asks on every
    plan. Read only, never applied, so sharing the parsed objects is safe."""
    documents = _documents(data)
    return documents[0], documents[-1]


def _unfinished(
    connection: ClusterConnection,
    dynamic: Any,
    documents: tuple[dict[str, Any], dict[str, Any]],
) -> bool:
    def found(document: dict[str, Any]) -> dict[str, Any] | None:
        resource, name, namespace = _where(dynamic, document)
        try:
            got = connection.call(
                f"reading {document['kind']} {name}",
                resource.get,
                name=name,
                namespace=namespace,
                header_params={"Accept": _METADATA_ONLY},  # a CRD is hundreds of kB
            )
        except NotFound:
            return None
        return dict(got.to_dict())

    first = found(documents[0])
    if first is None:
        return False
    fields = first.get("metadata", {}).get("managedFields") or []
    return "kinetic" in {entry.get("manager") for entry in fields} and not found(documents[-1])


def apply_manifest(
    connection: ClusterConnection, data: bytes, *, dry_run: bool = False
) -> list[str]:
    """Apply every object server-side, in order; ``Kind/name`` of each. ``dry_run``: the API
    server validates and admits each one (``dryRun=All``) and stores nothing."""
    return apply_objects(connection, _documents(data), dry_run=dry_run)


def apply_objects(
    connection: ClusterConnection, documents: list[dict[str, Any]], *, dry_run: bool = False
) -> list[str]:
    """:func:`apply_manifest` of objects already parsed."""
    with _dynamic(connection) as dynamic:
        return [_apply(connection, dynamic, doc, dry_run) for doc in documents]


def _apply(
    connection: ClusterConnection, dynamic: Any, document: dict[str, Any], dry_run: bool
) -> str:
    kind = document["kind"]
    resource, name, namespace = _where(dynamic, document)
    connection.call(
        f"applying {kind} {name}",
        dynamic.server_side_apply,
        resource,
        body=document,
        name=name,
        namespace=namespace,
        field_manager="kinetic",
        force_conflicts=True,
        dry_run="All" if dry_run else None,
    )
    return f"{kind}/{name}"
