"""``kinetic.Data``: data a remote function needs, which it receives as a plain path."""

import logging
import os
from pathlib import Path

from kinetic.data.hashing import Snapshot, snapshot
from kinetic_protocol import ConfigError
from kinetic_protocol.data import parse_gcs_uri, parse_hf_uri

__all__ = ["Data"]

_REMOTE_SCHEMES = ("gs://", "hf://")


class Data:
    """A reference to data the remote function needs: a local file or directory, a ``gs://``
    object or prefix, or an ``hf://`` dataset.

    Wherever it appears in the call (an argument, nested in lists, dicts or dataclasses, a
    closure), the function receives a plain ``str`` path, and ``volumes={"/data": Data(...)}``
    puts it at that path. A ``gs://`` URI ending in ``/`` is a prefix (a directory), otherwise
    one object. ``fuse=True`` mounts ``gs://`` (or uploaded local) data lazily with GCS FUSE
    where the backend can. ``hf_trust_remote_code=True`` lets an ``hf://`` dataset run code
    from its repository.

    Local paths are checked and made absolute here, so a missing path fails at once. Every
    submission sees the files as they are then, whether it uses a new ``Data`` or one used
    before: the content hash is taken again each time, from the per-file digests of
    :class:`~kinetic.data.digests.DigestCache` for files whose ``stat`` has not changed (so
    re-submitting unchanged data reads no file), and from the bytes for the others.
    """

    def __init__(self, path: str, fuse: bool = False, hf_trust_remote_code: bool = False) -> None:
        if not isinstance(path, str):
            raise TypeError(f"Data needs a str path or URI, got {type(path).__name__} {path!r}.")
        for name, flag in (("fuse", fuse), ("hf_trust_remote_code", hf_trust_remote_code)):
            if not isinstance(flag, bool):
                raise TypeError(f"Data({path!r}): {name} must be True or False, got {flag!r}.")
        if not path:
            raise ConfigError("Data needs a non-empty path or URI, got ''.")
        self._raw = path
        self._fuse = fuse
        self._hf_trust_remote_code = hf_trust_remote_code
        self._path = self._check(path)

    def _check(self, path: str) -> str:
        if path.startswith("gs://"):
            parse_gcs_uri(path)
        elif path.startswith("hf://"):
            parse_hf_uri(path)
            if self._fuse:
                raise ConfigError(
                    f"Data({path!r}, fuse=True): Hugging Face datasets cannot be FUSE-mounted; "
                    "they are loaded with the datasets library. Drop fuse=True."
                )
        elif "://" in path:
            raise ConfigError(
                f"Data({path!r}): unsupported URI scheme; use a local path, gs://BUCKET/... "
                "or hf://REPO."
            )
        if self._hf_trust_remote_code and not path.startswith("hf://"):
            raise ConfigError(
                f"Data({path!r}, hf_trust_remote_code=True): that option is for hf:// datasets."
            )
        if self._hf_trust_remote_code:
            logging.getLogger("kinetic").warning(
                "kinetic: Data(%r, hf_trust_remote_code=True) lets the dataset's repository run "
                "its own Python code in your job. Only use it for repositories you trust.",
                path,
            )
        if path.startswith(_REMOTE_SCHEMES):
            return path
        absolute = os.path.abspath(os.path.expanduser(path))
        if not os.path.exists(absolute):
            raise ConfigError(
                f"Data({path!r}): no such file or directory ({absolute}). Check the path; "
                "relative paths are taken from the current directory."
            )
        return absolute

    @property
    def path(self) -> str:
        """The absolute local path, or the URI as given."""
        return self._path

    @property
    def fuse(self) -> bool:
        return self._fuse

    @property
    def hf_trust_remote_code(self) -> bool:
        return self._hf_trust_remote_code

    @property
    def is_gcs(self) -> bool:
        return self._raw.startswith("gs://")

    @property
    def is_hf(self) -> bool:
        return self._raw.startswith("hf://")

    @property
    def is_local(self) -> bool:
        return not (self.is_gcs or self.is_hf)

    @property
    def is_dir(self) -> bool:
        """A local directory, a ``gs://`` prefix (ending in ``/``) or an ``hf://`` dataset."""
        if self.is_gcs:
            return self._raw.endswith("/")
        if self.is_hf:
            return True
        return Path(self._path).is_dir()

    def snapshot(self) -> Snapshot:
        """The content hash and file list of local data as the files are now.

        Never kept on the object: a ``Data`` reused after its files changed must ship the new
        bytes. Unchanged files cost a ``stat`` each (their digests are remembered by ``stat``).
        """
        if not self.is_local:
            raise ConfigError(f"{self!r} is remote; only local data has a content hash.")
        return snapshot(Path(self._path), self._raw)

    def content_hash(self) -> str:
        """SHA-256 of every file's relative path and contents, in sorted-walk order.

        Two-level: each file is hashed on its own (in parallel), then the per-file digests
        are combined, after a ``dir:`` or ``file:`` prefix so a file never collides with a
        directory holding only it. Symlinked directories are not recursed into; symlinked
        files are hashed by their contents. Taken from the files as they are now (digests
        of files unchanged since an earlier pass come from the digest cache).
        """
        return self.snapshot().content_hash

    def __repr__(self) -> str:
        extras = "".join(
            f", {name}=True"
            for name, on in (
                ("fuse", self._fuse),
                ("hf_trust_remote_code", self._hf_trust_remote_code),
            )
            if on
        )
        return f"Data({self._raw!r}{extras})"
