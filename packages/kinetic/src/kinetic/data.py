"""``kinetic.Data``: a reference to a local path or GCS URI that the job sees as a plain path."""

import hashlib
import os
from pathlib import Path

__all__ = ["Data"]


class Data:
    """Data the remote function needs: a local file or directory, or a ``gs://`` URI.

    A trailing slash on a GCS URI means a directory (prefix).
    """

    def __init__(self, path: str, fuse: bool = False, hf_trust_remote_code: bool = False) -> None:
        if not isinstance(path, str) or not path:
            raise ValueError(f"Data needs a non-empty path or URI, got {path!r}.")
        self._path = path
        self._fuse = fuse
        self._hf_trust_remote_code = hf_trust_remote_code

    @property
    def path(self) -> str:
        return self._path

    @property
    def fuse(self) -> bool:
        return self._fuse

    @property
    def hf_trust_remote_code(self) -> bool:
        return self._hf_trust_remote_code

    @property
    def is_gcs(self) -> bool:
        return self._path.startswith("gs://")

    @property
    def is_hf(self) -> bool:
        return self._path.startswith("hf://")

    @property
    def is_dir(self) -> bool:
        if self.is_gcs or self.is_hf:
            return self._path.endswith("/")
        return Path(self._path).is_dir()

    def __repr__(self) -> str:
        return f"Data({self._path!r}, fuse={self._fuse})"

    def __fspath__(self) -> str:
        """Locally a Data is its own path, so the local backend passes it straight through."""
        return str(Path(self._path).resolve()) if not (self.is_gcs or self.is_hf) else self._path

    def content_hash(self) -> str:
        """SHA-256 over every file's relative path and contents, in a deterministic order."""
        if self.is_gcs or self.is_hf:
            raise ValueError(f"content_hash needs local data; {self._path} is remote.")
        root = Path(self._path)
        if not root.is_dir():
            return hashlib.sha256(b"file:" + root.read_bytes()).hexdigest()
        outer = hashlib.sha256(b"dir:")
        for directory, dirnames, filenames in os.walk(root, followlinks=False):
            dirnames.sort()
            for name in sorted(filenames):
                path = Path(directory, name)
                inner = hashlib.sha256(path.relative_to(root).as_posix().encode() + b"\0")
                inner.update(path.read_bytes())
                outer.update(inner.digest())
        return outer.hexdigest()
