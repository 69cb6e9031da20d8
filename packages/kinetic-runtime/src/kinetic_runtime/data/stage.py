"""Stage a call's ``kinetic.Data`` before the function runs; give back the path of each.

Every entry of ``CallDescriptor.data`` becomes a plain path, by the first rule that fits:

* a volume's entry is at the volume's path (arguments that are the same ``Data`` get it too);
* FUSE-mounted data is where the backend mounted it (``/kinetic/fuse/<i>`` for an argument);
* data this machine already holds (``local``, or stored in a ``file://`` store) is read in
  place;
* anything else is fetched into ``<data dir>/<i>``: ``gs://`` objects in parallel, uploads from
  the jobs store, ``hf://`` datasets saved with ``datasets``; each once, however many
  entries name it.

Volumes are mounted by the platform (a pod's ``emptyDir`` or FUSE volume at that path), or,
for a local job, by the runtime itself in a private mount namespace
(:mod:`kinetic_runtime.data.namespace`), which it enters before any download starts.
Anything that cannot be staged raises :class:`~kinetic_protocol.errors.DataUnavailableError`.
"""

import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from kinetic_protocol import CallDescriptor, ObjectStore, Volume
from kinetic_protocol.data import DataSpec, GcsLocation, fuse_argument_path, parse_gcs_uri
from kinetic_protocol.errors import DataUnavailableError
from kinetic_protocol.optional import BucketStore
from kinetic_runtime.data import namespace, transfer
from kinetic_runtime.data.hf import load_hf_dataset
from kinetic_runtime.stores import LocalStore

if TYPE_CHECKING:
    from google.cloud.storage import Client

__all__ = ["stage_data"]

Say = Callable[[str], None]
_MIB = 1024 * 1024


def _describe(spec: DataSpec) -> str:
    return spec.label or spec.uri


class _Stager:
    """Fetches and places one call's data; ``say`` writes a line to the job's log."""

    def __init__(
        self,
        call: CallDescriptor,
        volumes: list[Volume],
        store: ObjectStore,
        data_dir: Path,
        say: Say,
    ) -> None:
        self.call = call
        self.volumes = volumes
        self.store = store
        self.data_dir = data_dir
        self.say = say
        self._client: Client | None = None

    # -- where data already is --------------------------------------------------------------

    def in_place(self, spec: DataSpec) -> Path | None:
        """A local path that already holds ``spec``'s bytes, if this machine has one."""
        if spec.source == "local":
            return Path(spec.uri)
        if spec.source == "stored" and isinstance(self.store, LocalStore):
            key = spec.uri + spec.name if not spec.is_dir else spec.uri.rstrip("/")
            found = Path(self.store.url(key))
            if not found.exists():
                raise DataUnavailableError(self._stored_missing(spec))
            links = self.store.links(key + "/") if spec.is_dir else []
            if links:  # the job would read through it: anywhere, such as your keys
                raise DataUnavailableError(
                    f"{_describe(spec)} in the jobs store ({self.store.uri}/{spec.uri}) holds "
                    f"symbolic links ({', '.join(links[:3])}), which a job never reads through: "
                    "whoever can write the store put them there. Remove them, or submit the "
                    "job again to upload the data anew."
                )
            return found
        return None

    def _stored_missing(self, spec: DataSpec) -> str:
        return (
            f"{_describe(spec)} is gone from the jobs store ({self.store.uri}/{spec.uri}): it "
            "was deleted after the job was submitted. Submit the job again to upload it."
        )

    # -- fetching ---------------------------------------------------------------------------

    def _gcs_client(self) -> "Client":
        if self._client is None:
            if isinstance(self.store, BucketStore):
                self._client = self.store.client()
            else:
                from kinetic_runtime.stores.gcs import make_client

                self._client = make_client()
        return self._client

    def _gcs_location(self, spec: DataSpec) -> GcsLocation:
        if spec.source == "gcs":
            return parse_gcs_uri(spec.uri)
        assert isinstance(self.store, BucketStore)
        name = self.store.prefix + spec.uri + ("" if spec.is_dir else spec.name)
        return GcsLocation(self.store.bucket_name, name)

    def fetch(self, spec: DataSpec, destination: Path) -> None:
        """Put ``spec``'s bytes at ``destination``: a directory (made, empty) or a file path."""
        begin, moved = time.monotonic(), [0]

        def progress(count: int) -> None:
            moved[0] += count

        source = self.in_place(spec)
        if source is not None:
            self._copy(source, destination)
        elif spec.source == "hf":
            self.say(f"data: loading {spec.uri}")
            load_hf_dataset(spec, destination, self.say)
        else:  # gs:// data, or an upload to a gs:// store (a file:// one is read in place)
            self._download(spec, destination, progress)
        seconds = time.monotonic() - begin
        size = f", {moved[0] / _MIB:.1f} MiB" if moved[0] else ""
        self.say(f"data: {_describe(spec)} -> {destination}{size} in {seconds:.2f}s")

    def _download(self, spec: DataSpec, destination: Path, progress: transfer.Progress) -> None:
        location = self._gcs_location(spec)
        uri = spec.uri if spec.source == "gcs" else _describe(spec)
        client = self._gcs_client()
        try:
            objects = transfer.list_objects(client, location)
        except DataUnavailableError as exc:
            if spec.source == "stored":
                raise DataUnavailableError(self._stored_missing(spec)) from exc
            raise
        if location.is_prefix:
            pairs = [(o, transfer.local_path(destination, o.relative, uri)) for o in objects]
        else:
            pairs = [(objects[0], destination)]
        transfer.download_objects(client, location.bucket, pairs, uri=uri, progress=progress)

    @staticmethod
    def _copy(source: Path, destination: Path) -> None:
        if source.is_dir():
            shutil.copytree(source, destination, symlinks=False, dirs_exist_ok=True)
        else:
            shutil.copy2(source, destination)

    # -- placing ----------------------------------------------------------------------------

    def _mounted(self, spec: DataSpec, path: str) -> str:
        """FUSE data: the backend mounted it; check it is really there."""
        if not Path(path).exists():
            raise DataUnavailableError(
                f"{_describe(spec)} should be mounted (GCS FUSE) at {path}, which does not "
                "exist: the cluster's GCS FUSE CSI driver did not mount it. Check that the "
                "GcsFuseCsiDriver add-on is enabled, or use Data(..., fuse=False)."
            )
        return path

    def _scratch(self, index: int, spec: DataSpec, where: str) -> Path:
        """A fresh directory under the data dir, or a file path in one for a single file."""
        directory = self.data_dir / where / str(index)
        directory.mkdir(parents=True, exist_ok=True)
        return directory if spec.is_dir else directory / (spec.name or "data")

    def volumes_in_namespace(self) -> dict[int, str]:
        """Mount every volume in a private namespace, then fetch what is not in place."""
        binds: list[namespace.Bind] = []
        sources: dict[int, tuple[Path, bool]] = {}
        pending: list[tuple[DataSpec, Path]] = []
        for volume in self.volumes:
            spec = self.call.data[volume.data]
            if volume.data not in sources:
                source = self.in_place(spec)
                users_own = source is not None
                if source is None:  # fetched into a scratch directory once mounted
                    source = self._scratch(volume.data, spec, "volumes")
                    if not spec.is_dir:
                        source.touch()
                    pending.append((spec, source))
                sources[volume.data] = (source, users_own)
            source, users_own = sources[volume.data]
            # The user's own files are mounted read-only: the job must not change them.
            binds.append(namespace.Bind(source, volume.path, read_only=users_own))
        workspace = self.data_dir / "mounts"
        workspace.mkdir(parents=True, exist_ok=True)
        namespace.enter(binds, workspace)
        for spec, source in pending:
            self.fetch(spec, source)
        return self._first_volumes()

    def volumes_on_platform(self) -> dict[int, str]:
        """The platform mounted each volume's path (or its parent, for a file); fill them."""
        placed: dict[int, str] = {}
        for volume in self.volumes:
            spec = self.call.data[volume.data]
            target = Path(volume.path)
            if spec.fuse:
                self._mounted(spec, volume.path)
            elif volume.data in placed:
                self._copy(Path(placed[volume.data]), target)
            else:
                directory = target if spec.is_dir else target.parent
                try:
                    directory.mkdir(parents=True, exist_ok=True)
                except OSError as exc:
                    raise DataUnavailableError(
                        f"volume {volume.path} is not mounted and cannot be made ({exc}); the "
                        "backend should have mounted a directory there."
                    ) from exc
                self.fetch(spec, target)
            placed.setdefault(volume.data, volume.path)
        return placed

    def _first_volumes(self) -> dict[int, str]:
        first: dict[int, str] = {}
        for volume in self.volumes:
            first.setdefault(volume.data, volume.path)
        return first

    def argument_path(self, index: int, spec: DataSpec) -> str:
        if spec.fuse:
            mount = fuse_argument_path(index)
            return self._mounted(spec, mount if spec.is_dir else f"{mount}/{spec.name}")
        source = self.in_place(spec)
        if source is not None:
            return str(source)
        destination = self._scratch(index, spec, "arguments")
        self.fetch(spec, destination)
        return str(destination)


def _same_data(spec: DataSpec) -> tuple[object, ...]:
    """Two entries with this key are the same bytes (their labels may differ)."""
    return (spec.source, spec.uri, spec.is_dir, spec.name, spec.fuse, spec.hf_trust_remote_code)


def stage_data(
    call: CallDescriptor,
    store: ObjectStore,
    data_dir: Path,
    *,
    private_mounts: bool,
    say: Say,
    only: set[int] | None = None,
) -> list[str | None]:
    """Stage the entries of ``call.data``; return the path the job sees for each, in order.

    ``only``: stage just these entries (and every volume's): a batch child needs its own
    input's data and its function's, not its siblings'. An entry not staged has no path.
    Entries that name the same data (two ``Data`` objects of one URI) are staged once.
    """
    if not call.data:
        return []
    first: dict[tuple[object, ...], int] = {}
    alias = [first.setdefault(_same_data(spec), index) for index, spec in enumerate(call.data)]
    volumes = [Volume(path=v.path, data=alias[v.data]) for v in call.volumes]
    stager = _Stager(call, volumes, store, data_dir, say)
    if volumes and private_mounts:
        placed: dict[int, str] = stager.volumes_in_namespace()
    else:
        placed = stager.volumes_on_platform()
    wanted = set(range(len(call.data))) if only is None else only
    for index in sorted({alias[i] for i in wanted} - set(placed)):
        placed[index] = stager.argument_path(index, call.data[index])
    return [placed.get(alias[index]) for index in range(len(call.data))]
