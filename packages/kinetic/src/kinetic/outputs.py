"""A job's outputs, from the client: list and download what it wrote to ``KINETIC_OUTPUT_DIR``.

The directory is ``output_dir=`` when the decorator was given one, else ``outputs/<job_id>``
in the job's store (a local directory for a ``file://`` store). Inside the job,
:func:`kinetic_runtime.outputs.outputs` is the way to write there. Outputs are never
cleaned up by Kinetic: they outlive the job, its handle and its stored artifacts, so
:func:`kinetic.jobs.job_outputs` finds them from the job id alone.
"""

import os
import shutil
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from kinetic import _log
from kinetic._context import open_store
from kinetic_protocol import ConfigError, JobRecord, layout
from kinetic_protocol.data import parse_gcs_uri
from kinetic_protocol.optional import BucketStore
from kinetic_runtime.data import transfer
from kinetic_runtime.stores import LocalStore

if TYPE_CHECKING:
    from google.cloud.storage import Client

__all__ = ["JobOutputs", "OutputFile"]


@dataclass(frozen=True, order=True)
class OutputFile:
    """One file a job wrote: its ``/``-separated path below the output directory, and size."""

    name: str
    size: int


@dataclass(frozen=True)
class JobOutputs:
    """The output directory of one job (``output_dir`` empty: the store's default).

    ``recorded`` is false when the job's record was not found (an unknown id, or a job cleaned
    up): its outputs are then looked for at the store's default place."""

    job_id: str
    store_uri: str
    output_dir: str = ""
    project: str = ""
    recorded: bool = True

    @classmethod
    def of(cls, record: JobRecord) -> "JobOutputs":
        return cls(record.job_id, record.store_uri, record.output_dir, record.project)

    @property
    def location(self) -> str:
        """The job's ``KINETIC_OUTPUT_DIR`` (without a trailing slash)."""
        if self.output_dir:
            return self.output_dir.rstrip("/")
        return open_store(self.store_uri).url(layout.output_prefix(self.job_id).rstrip("/"))

    def files(self) -> list[OutputFile]:
        """The files under the output directory, sorted by name; none if it has none (yet)."""
        where = self.location
        if where.startswith("gs://"):
            return sorted(OutputFile(o.relative, o.size) for o in self._gcs_objects(where))
        return sorted(_local_files(where))

    def download(self, directory: str | Path, *, overwrite: bool = False) -> list[Path]:
        """Copy every output into ``directory`` (made if missing), keeping relative paths; a
        file already there is an error unless ``overwrite``, checked before anything is copied."""
        if not str(directory).strip():
            raise ConfigError(
                f"directory={directory!r} is an empty path: name the directory to download the "
                f"outputs of job {self.job_id} into (e.g. 'outputs', or '.' for this one)."
            )
        target = Path(directory).expanduser().absolute()
        where = self.location
        remote = self._gcs_objects(where) if where.startswith("gs://") else []
        names = [o.relative for o in remote] if remote else [f.name for f in _local_files(where)]
        destinations = [transfer.local_path(target, name, where) for name in names]
        clashes = [str(path) for path in destinations if path.exists()]
        if clashes and not overwrite:
            raise ConfigError(
                f"Not downloading the outputs of job {self.job_id}: {len(clashes)} file(s) "
                f"already exist in {target} (e.g. {clashes[0]}). Choose an empty directory, or "
                "overwrite them (overwrite=True, --overwrite)."
            )
        target.mkdir(parents=True, exist_ok=True)
        if remote:
            bucket = parse_gcs_uri(where + "/").bucket
            pairs = list(zip(remote, destinations, strict=True))
            transfer.download_objects(self._client(), bucket, pairs, uri=where)
            return destinations
        store = _local_store(where)
        for name, path in zip(names, destinations, strict=True):
            path.parent.mkdir(parents=True, exist_ok=True)
            assert store is not None
            _copy_out(store, name, path)
        return destinations

    def _client(self) -> "Client":
        store = open_store(self.store_uri)
        if isinstance(store, BucketStore):
            return store.client()
        from kinetic_runtime.stores.gcs import make_client

        return make_client(self.project or None)

    def _gcs_objects(self, where: str) -> list[transfer.ListedObject]:
        location = parse_gcs_uri(where + "/")
        return transfer.list_objects(self._client(), location, allow_empty=True)


def _local_store(where: str) -> LocalStore | None:
    """The output directory read as a store is: through no link below it (a store writer
    can put one at ``outputs/<job>/model.bin`` that points at your keys)."""
    root = Path(where).absolute()
    return LocalStore(root) if root.is_dir() else None


def _local_files(where: str) -> list[OutputFile]:
    store = _local_store(where)
    if store is None:
        return []
    for link in store.links(""):
        _log.notice(
            f"output-link:{where}/{link}",
            f"Left out {where}/{link}: it is a symbolic link, and outputs are read through "
            "no link (it could point anywhere, such as your keys). Remove it.",
        )
    files = []
    for name in store.list(""):
        with store.open(name) as file:
            files.append(OutputFile(name, os.fstat(file.fileno()).st_size))
    return files


def _copy_out(store: LocalStore, name: str, destination: Path) -> None:
    """Copy one output, its mode and times with it, as it is read: through no link."""
    with store.open(name) as source, destination.open("wb") as target:
        shutil.copyfileobj(source, target)
        found = os.fstat(source.fileno())
    os.chmod(destination, stat.S_IMODE(found.st_mode))
    os.utime(destination, ns=(found.st_atime_ns, found.st_mtime_ns))
