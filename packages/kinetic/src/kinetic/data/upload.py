"""Put local data in the jobs store, content-addressed, for jobs that cannot see this machine.

The files go to ``data/<sha256>/files/`` and a ``DataManifest`` to ``data/<sha256>/complete.json``
*after* them, create-only: a marker means a complete upload, so a cache hit is one existence
check and uploads nothing, while an upload interrupted half-way (no marker) is simply done
again. Uploads to ``gs://`` run in parallel through ``google-cloud-storage``'s transfer manager;
other stores are written file by file from a small thread pool.
"""

import contextlib
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path

from kinetic import _log, session
from kinetic.data.hashing import Snapshot
from kinetic.data.progress import transfer_progress
from kinetic_protocol import DataManifest, ObjectStore, PreconditionFailedError, layout
from kinetic_protocol.optional import BucketStore
from kinetic_protocol.records import encode_json
from kinetic_runtime.data import transfer

__all__ = ["upload_snapshot"]

log = _log.get_logger(__name__)
_STORE_WORKERS = 16
_MIB = 1024 * 1024


def _send(store: ObjectStore, snapshot: Snapshot, label: str) -> None:
    prefix = layout.data_files_prefix(snapshot.content_hash)
    files = [(item.path, prefix + item.relative) for item in snapshot.files]
    with transfer_progress(f"Uploading {label}", snapshot.total_bytes) as progress:
        if isinstance(store, BucketStore):
            named = [(path, store.prefix + key) for path, key in files]
            transfer.upload_files(store.client(), store.bucket_name, named, progress=progress)
            return

        def put(item: tuple[Path, str]) -> None:
            data = item[0].read_bytes()
            store.write(item[1], data)
            progress(len(data))

        with ThreadPoolExecutor(_STORE_WORKERS, thread_name_prefix="kinetic-upload") as pool:
            list(pool.map(put, files))


def upload_snapshot(store: ObjectStore, snapshot: Snapshot, label: str) -> bool:
    """Make sure ``snapshot`` is complete in ``store``; True if this call uploaded it.

    Checked once per session and store; concurrent submissions of the same data (a batch)
    upload it once.
    """
    digest = snapshot.content_hash
    active = session.current()
    with active.data_lock(store.uri, digest):
        if active.data_uploaded(store.uri, digest):
            return False
        marker = layout.data_marker_key(digest)
        if store.exists(marker):
            log.info(
                "data.cached",
                data=label,
                content_hash=digest[:16],
                store=store.uri,
                note="unchanged since an earlier upload; nothing uploaded",
            )
            active.mark_data_uploaded(store.uri, digest)
            return False
        size = snapshot.total_bytes
        log.info(
            "data.uploading",
            data=label,
            content_hash=digest[:16],
            store=store.uri,
            files=len(snapshot.files),
            mib=round(size / _MIB, 1),
        )
        began = time.monotonic()
        _send(store, snapshot, label)
        manifest = DataManifest(
            content_hash=digest,
            is_dir=snapshot.is_dir,
            files=len(snapshot.files),
            bytes=size,
            name="" if snapshot.is_dir else snapshot.files[0].relative,
            uploaded_at=datetime.now(UTC).isoformat(timespec="seconds"),
        )
        with contextlib.suppress(PreconditionFailedError):  # another client finished it first
            store.write(marker, encode_json(manifest), if_absent=True)
        seconds = time.monotonic() - began
        log.info(
            "data.uploaded",
            data=label,
            content_hash=digest[:16],
            seconds=round(seconds, 2),
            mib_per_s=round(size / _MIB / max(seconds, 1e-6), 1),
        )
        active.mark_data_uploaded(store.uri, digest)
        return True
