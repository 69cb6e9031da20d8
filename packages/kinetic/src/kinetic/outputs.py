"""A job's outputs, from the client: list and download what it wrote to ``KINETIC_OUTPUT_DIR``.

The directory is ``output_dir=`` when the decorator was given one, else ``outputs/<job_id>``
in the job's store (a local directory for a ``file://`` store). Inside the job,
:func:`kinetic_runtime.outputs.outputs` is the way to write there. Outputs are never
cleaned up by Kinetic; they outlive the job, its handle and its stored artifacts.
"""

import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from kinetic._context import store_for
from kinetic_protocol import ConfigError, JobRecord, layout
from kinetic_protocol.data import parse_gcs_uri
from kinetic_runtime.data import transfer
from kinetic_runtime.stores import GCSStore

if TYPE_CHECKING:
    from google.cloud.storage import Client

__all__ = ["OutputFile", "download_outputs", "list_outputs", "output_dir_of"]


@dataclass(frozen=True, order=True)
class OutputFile:
    """One file a job wrote: its ``/``-separated path below the output directory, and size."""

    name: str
    size: int


def output_dir_of(record: JobRecord) -> str:
    """The job's ``KINETIC_OUTPUT_DIR`` (without a trailing slash)."""
    if record.output_dir:
        return record.output_dir.rstrip("/")
    return store_for(record).url(layout.output_prefix(record.job_id).rstrip("/"))


def _client(record: JobRecord) -> "Client":
    store = store_for(record)
    if isinstance(store, GCSStore):
        return store.client()
    from kinetic_runtime.stores.gcs import make_client

    return make_client(record.project or None)


def _gcs_objects(record: JobRecord, where: str) -> list[transfer.ListedObject]:
    return transfer.list_objects(_client(record), parse_gcs_uri(where + "/"), allow_empty=True)


def _local_files(where: str) -> list[OutputFile]:
    root = Path(where)
    if not root.is_dir():
        return []
    return [
        OutputFile(path.relative_to(root).as_posix(), path.stat().st_size)
        for path in root.rglob("*")
        if path.is_file()
    ]


def list_outputs(record: JobRecord) -> list[OutputFile]:
    """The files under the job's output directory, sorted by name."""
    where = output_dir_of(record)
    if where.startswith("gs://"):
        return sorted(OutputFile(o.relative, o.size) for o in _gcs_objects(record, where))
    return sorted(_local_files(where))


def download_outputs(
    record: JobRecord, directory: str | Path, *, overwrite: bool = False
) -> list[Path]:
    """Copy the job's outputs into ``directory``, keeping their relative paths; an existing
    file there is an error unless ``overwrite``, checked before anything is copied."""
    target = Path(directory).expanduser().absolute()
    where = output_dir_of(record)
    remote = _gcs_objects(record, where) if where.startswith("gs://") else []
    names = [o.relative for o in remote] if remote else [f.name for f in _local_files(where)]
    destinations = [transfer.local_path(target, name, where) for name in names]
    clashes = [str(path) for path in destinations if path.exists()]
    if clashes and not overwrite:
        raise ConfigError(
            f"Not downloading the outputs of job {record.job_id}: {len(clashes)} file(s) "
            f"already exist in {target} (e.g. {clashes[0]}). Choose an empty directory, or "
            "overwrite (overwrite=True, --overwrite)."
        )
    target.mkdir(parents=True, exist_ok=True)
    if remote:
        pairs = list(zip(remote, destinations, strict=True))
        bucket = parse_gcs_uri(where + "/").bucket
        transfer.download_objects(_client(record), bucket, pairs, uri=where)
        return destinations
    for name, path in zip(names, destinations, strict=True):
        path.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(Path(where, name), path)
    return destinations
