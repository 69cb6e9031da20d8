"""Plan one call's data: what the runtime stages (``DataSpec``s, volumes) and what a Kubernetes
backend mounts (``Mount``s), uploading local data first where the backend cannot see it.

What a backend can do comes from its capabilities only: ``local_data`` (jobs read this
machine's files in place), ``volumes`` and ``fuse``. Data asked to be FUSE-mounted where the
backend cannot is staged up front, and a one-line notice says so.
"""

import posixpath
from collections.abc import Sequence
from dataclasses import dataclass

from kinetic import _log
from kinetic.data.hashing import Snapshot
from kinetic.data.reference import Data
from kinetic.data.upload import upload_snapshot
from kinetic_protocol import Capabilities, ConfigError, DataSpec, Mount, ObjectStore, Volume, layout
from kinetic_protocol.data import fuse_argument_path, mount_for

__all__ = ["CallData", "plan_call_data"]


@dataclass(frozen=True)
class CallData:
    """The data of one call, as the call descriptor and the job record carry it."""

    specs: list[DataSpec]
    volumes: list[Volume]
    mounts: list[Mount]


Upload = tuple[Snapshot, str]
"""Local data to upload once every check has passed: its snapshot and its label."""


def _local_spec(
    data: Data, capabilities: Capabilities, store: ObjectStore, uploads: list[Upload]
) -> DataSpec:
    name = "" if data.is_dir else posixpath.basename(data.path)
    if capabilities.local_data:
        return DataSpec(
            source="local", uri=data.path, is_dir=data.is_dir, name=name, label=data.path
        )
    snapshot = data.snapshot()
    uploads.append((snapshot, data.path))
    return DataSpec(
        source="stored",
        uri=layout.data_files_prefix(snapshot.content_hash),
        is_dir=snapshot.is_dir,
        name="" if snapshot.is_dir else snapshot.files[0].relative,
        fuse=data.fuse and capabilities.fuse and store.uri.startswith("gs://"),
        label=data.path,
    )


def _spec(
    data: Data, capabilities: Capabilities, store: ObjectStore, backend: str, uploads: list[Upload]
) -> DataSpec:
    if data.is_local:
        spec = _local_spec(data, capabilities, store, uploads)
    elif data.is_gcs:
        name = "" if data.is_dir else data.path.rsplit("/", 1)[-1]
        spec = DataSpec(
            source="gcs",
            uri=data.path,
            is_dir=data.is_dir,
            name=name,
            fuse=data.fuse and capabilities.fuse,
            label=data.path,
        )
    else:
        spec = DataSpec(
            source="hf",
            uri=data.path,
            is_dir=True,
            label=data.path,
            hf_trust_remote_code=data.hf_trust_remote_code,
        )
    if data.fuse and not spec.fuse:
        _log.notice(
            f"fuse-staged:{backend}",
            f"kinetic: the {backend} backend does not mount Data(..., fuse=True) lazily; such "
            "data is staged before the function runs (local data it can see is read in place, "
            "the rest is downloaded).",
        )
    return spec


def _check_fuse_file_volume(volume: Volume, spec: DataSpec) -> None:
    """A FUSE mount is a directory: a single object shows there under its own name."""
    if spec.fuse and not spec.is_dir and posixpath.basename(volume.path) != spec.name:
        directory = posixpath.dirname(volume.path)
        raise ConfigError(
            f"volumes[{volume.path!r}] is {spec.label} with fuse=True: GCS FUSE mounts the "
            f"object's directory, so it appears as {posixpath.join(directory, spec.name)}. "
            f"Use that path as the volume key, or fuse=False to download it to {volume.path}."
        )


def _mounts(specs: Sequence[DataSpec], volumes: Sequence[Volume], store_uri: str) -> list[Mount]:
    """One mount per directory a Kubernetes backend must provide; a single-file volume gets
    its parent directory."""
    wanted: dict[str, Mount] = {}

    def add(mount: Mount, why: str) -> None:
        seen = wanted.setdefault(mount.path, mount)
        if seen != mount:
            raise ConfigError(
                f"{why} needs {mount.path} mounted with other data than another volume "
                "already mounted there; put each single-file volume of different data in its "
                "own directory."
            )

    for volume in volumes:
        spec = specs[volume.data]
        _check_fuse_file_volume(volume, spec)
        directory = volume.path if spec.is_dir else posixpath.dirname(volume.path)
        add(mount_for(spec, directory, store_uri), f"volumes[{volume.path!r}]")
    in_volumes = {volume.data for volume in volumes}
    for index, spec in enumerate(specs):
        if spec.fuse and index not in in_volumes:
            add(mount_for(spec, fuse_argument_path(index), store_uri), spec.label)
    return sorted(wanted.values(), key=lambda m: m.path)


def plan_call_data(
    found: Sequence[Data],
    volumes: Sequence[tuple[str, Data]],
    *,
    capabilities: Capabilities,
    store: ObjectStore,
    backend: str,
) -> CallData:
    """Specs for ``found`` (the pickled call's ``Data``, persistent id order) and the
    decorator's ``volumes``; the same object in both is one entry. Local data is uploaded
    last, once every check of the plan has passed: a refused plan uploads nothing."""
    data = list(found)
    index = {id(item): number for number, item in enumerate(data)}
    for _, item in volumes:
        if id(item) not in index:
            index[id(item)] = len(data)
            data.append(item)
    uploads: list[Upload] = []
    specs = [_spec(item, capabilities, store, backend, uploads) for item in data]
    planned = [Volume(path=path, data=index[id(item)]) for path, item in volumes]
    mounts = _mounts(specs, planned, store.uri)
    for snapshot, label in uploads:
        upload_snapshot(store, snapshot, label)
    return CallData(specs, planned, mounts)
