"""Many files to or from GCS at once, with ``google-cloud-storage``'s transfer manager.

Used by the client to upload local data, by the runtime to download ``gs://`` data, and by
both for job outputs. Work goes in chunks, so a directory of a million files never holds a
million futures at once; within a chunk the transfer manager runs ``workers`` threads
(threads, not processes: the work waits on the network, and a process pool would pay to
start and to pickle every request). Client errors become
:class:`~kinetic_protocol.errors.StorageError` here.
"""

import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from kinetic_protocol.data import GcsLocation
from kinetic_protocol.errors import DataUnavailableError, StorageError
from kinetic_runtime.stores.gcs import api_errors, short

if TYPE_CHECKING:
    from google.cloud.storage import Client

__all__ = [
    "DEFAULT_WORKERS",
    "ListedObject",
    "Progress",
    "download_objects",
    "list_objects",
    "local_path",
    "upload_files",
]

DEFAULT_WORKERS = min(32, 4 * (os.cpu_count() or 1))
"""Transfers wait on the network far more than on the CPU; past ~32 a client gains little."""
_CHUNK_PER_WORKER = 8
"""Work is handed to the transfer manager this many files per worker at a time: enough to
keep every worker busy, few enough that progress moves steadily and memory stays flat."""
_T = TypeVar("_T")

Progress = Callable[[int], None]
"""Called with a number of bytes just moved (from the transfer's worker threads)."""


@dataclass(frozen=True)
class ListedObject:
    """One object found under a ``gs://`` prefix: its full name and its name below the prefix."""

    name: str
    relative: str
    size: int


def _chunks(items: Sequence[_T], size: int) -> Iterator[Sequence[_T]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _raise_first(results: list[Any], doing: str) -> None:
    for result in results:
        if isinstance(result, BaseException):
            raise StorageError(f"{doing} failed: {short(result)}") from result


def upload_files(
    client: "Client",
    bucket: str,
    files: Sequence[tuple[Path, str]],
    *,
    workers: int = DEFAULT_WORKERS,
    progress: Progress | None = None,
) -> None:
    """Upload each ``(local path, object name)`` of ``files`` to ``bucket``, in parallel.

    Files go by name, so the client knows each size and sends a small file in one request
    (an open file of unknown size costs a resumable upload's two). ``progress`` hears of each
    chunk of ``_CHUNK_PER_WORKER * workers`` files as it completes.
    """
    from google.cloud.storage import transfer_manager

    target = client.bucket(bucket)
    for chunk in _chunks(files, _CHUNK_PER_WORKER * workers):
        pairs = [(str(path), target.blob(name)) for path, name in chunk]
        results = transfer_manager.upload_many(
            pairs, max_workers=workers, worker_type=transfer_manager.THREAD
        )
        _raise_first(results, f"uploading to gs://{bucket}")
        if progress is not None:
            progress(sum(path.stat().st_size for path, _ in chunk))


def list_objects(
    client: "Client", location: GcsLocation, *, allow_empty: bool = False
) -> list[ListedObject]:
    """The objects ``location`` names: one object, or every object under a prefix.

    A missing object, an empty prefix (unless ``allow_empty``) or a missing bucket is a
    ``DataUnavailableError`` that says so (with the prefix form to try when a single object
    was not found).
    """
    errors = api_errors()
    try:
        if not location.is_prefix:
            blob = client.bucket(location.bucket).get_blob(location.name)
            if blob is None:
                raise DataUnavailableError(
                    f"{location.uri} does not exist. If it is a directory (a prefix), add a "
                    f"trailing slash: {location.uri}/"
                )
            name = location.name.rsplit("/", 1)[-1]
            return [ListedObject(location.name, name, int(blob.size or 0))]
        found = [
            ListedObject(blob.name, blob.name[len(location.name) :], int(blob.size or 0))
            for blob in client.list_blobs(location.bucket, prefix=location.name)
            if not blob.name.endswith("/")  # "directory" placeholders hold no data
        ]
    except errors.NotFound as exc:
        raise DataUnavailableError(
            f"{location.uri}: bucket gs://{location.bucket} does not exist ({short(exc)})."
        ) from exc
    except (errors.Forbidden, errors.Unauthorized) as exc:
        raise DataUnavailableError(
            f"{location.uri}: permission denied ({short(exc)}). The job's identity (the pod's "
            "service account, or your credentials locally) must be able to read it."
        ) from exc
    except errors.GoogleAPIError as exc:
        raise StorageError(f"listing {location.uri} failed: {short(exc)}") from exc
    if not found and not allow_empty:
        raise DataUnavailableError(f"{location.uri} holds no objects (an empty or missing prefix).")
    return found


def local_path(root: Path, relative: str, uri: str) -> Path:
    """Where an object lands under ``root``; names that would climb out of it are refused."""
    target = Path(os.path.normpath(root / relative))
    if relative.startswith("/") or not target.is_relative_to(root):
        raise DataUnavailableError(
            f"{uri}: object name {relative!r} would be written outside the data directory."
        )
    return target


def download_objects(
    client: "Client",
    bucket: str,
    objects: Sequence[tuple[ListedObject, Path]],
    *,
    uri: str,
    workers: int = DEFAULT_WORKERS,
    progress: Progress | None = None,
) -> None:
    """Download each ``(object, local path)`` of ``objects`` from ``bucket``, in parallel."""
    from google.cloud.storage import transfer_manager

    source = client.bucket(bucket)
    for directory in {target.parent for _, target in objects}:
        directory.mkdir(parents=True, exist_ok=True)
    for chunk in _chunks(objects, _CHUNK_PER_WORKER * workers):
        pairs = [(source.blob(item.name), str(target)) for item, target in chunk]
        results = transfer_manager.download_many(
            pairs, max_workers=workers, worker_type=transfer_manager.THREAD
        )
        _raise_first(results, f"downloading {uri}")
        if progress is not None:
            progress(sum(item.size for item, _ in chunk))
