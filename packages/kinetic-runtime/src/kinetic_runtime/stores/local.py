"""An object store in a local directory: what the local backend and tests use.

Readers never see a half-written object: every write goes to a temporary file in the target's
own directory and is then renamed (overwrite) or hard-linked (create-only) into place. The
hard link fails if the target exists, which makes create-only writes race-free between threads
and processes. Temporary files carry a reserved name and never show up in :meth:`list`.
"""

import contextlib
import errno
import os
import secrets
from pathlib import Path

from kinetic_protocol.errors import (
    ConfigError,
    ObjectNotFoundError,
    PreconditionFailedError,
    StorageError,
    StoreError,
)
from kinetic_runtime.private_files import FILE_MODE, make_private_dirs
from kinetic_runtime.stores._keys import check_key, check_prefix

__all__ = ["LocalStore"]

_TEMP_MARK = ".kinetic-tmp-"
# A writer may lose its freshly made directory to a concurrent delete_prefix that prunes it.
_DIRECTORY_RACE_RETRIES = 5


class LocalStore:
    """A :class:`~kinetic_protocol.store.ObjectStore` rooted at an absolute directory.

    The directory, and any directories under it, are created on first write.
    """

    def __init__(self, root: str | os.PathLike[str]) -> None:
        path = Path(root)
        if not path.is_absolute():
            raise ConfigError(
                f"LocalStore root {os.fspath(root)!r} is not an absolute path; "
                "pass an absolute directory such as '/home/me/.kinetic/store'."
            )
        self._root = Path(os.path.normpath(path))

    @property
    def root(self) -> Path:
        """The directory that holds the objects."""
        return self._root

    @property
    def uri(self) -> str:
        return self._root.as_uri()

    def __repr__(self) -> str:
        return f"LocalStore({os.fspath(self._root)!r})"

    def read(self, key: str) -> bytes:
        path = self._path(key)
        try:
            return path.read_bytes()
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
            raise ObjectNotFoundError(f"No object {key!r} in store {self.uri}") from None
        except OSError as exc:
            raise _failed("read", key, self.uri, exc) from exc

    def write(self, key: str, data: bytes, *, if_absent: bool = False) -> None:
        path = self._path(key)
        temp = self._write_temp(key, path, data)
        try:
            if if_absent:
                os.link(temp, path)
            else:
                os.replace(temp, path)
        except FileExistsError:
            raise PreconditionFailedError(
                f"Object {key!r} already exists in store {self.uri}; it is written only once."
            ) from None
        except OSError as exc:
            raise _failed("write", key, self.uri, exc) from exc
        finally:
            _unlink_quietly(temp)

    def exists(self, key: str) -> bool:
        return self._path(key).is_file()

    def list(self, prefix: str) -> list[str]:
        check_prefix(prefix)
        # Scan only the deepest directory the prefix names; its last segment may be partial.
        directory, _, _ = prefix.rpartition("/")
        start = self._root / directory if directory else self._root
        keys: list[str] = []
        for dirpath, _dirnames, filenames in os.walk(start):
            relative_dir = Path(dirpath).relative_to(self._root).as_posix()
            for name in filenames:
                if name.startswith(_TEMP_MARK):
                    continue
                key = name if relative_dir == "." else f"{relative_dir}/{name}"
                if key.startswith(prefix):
                    keys.append(key)
        keys.sort()
        return keys

    def delete(self, key: str) -> None:
        path = self._path(key)
        try:
            path.unlink()
        except (FileNotFoundError, NotADirectoryError):
            return
        except OSError as exc:
            raise _failed("delete", key, self.uri, exc) from exc

    def delete_prefix(self, prefix: str) -> int:
        removed = 0
        parents: set[Path] = set()
        for key in self.list(prefix):
            path = self._root / key
            try:
                path.unlink()
            except FileNotFoundError:
                continue  # another deleter got there first; it counts it
            except OSError as exc:
                raise _failed("delete", key, self.uri, exc) from exc
            removed += 1
            parents.update(p for p in path.parents if p != self._root and self._root in p.parents)
        # Deepest first, so a directory is tried only after its children.
        for directory in sorted(parents, key=lambda p: len(p.parts), reverse=True):
            # Not empty (other keys, or a writer just arrived) or already gone: leave it.
            with contextlib.suppress(OSError):
                directory.rmdir()
        return removed

    def url(self, key: str) -> str:
        return os.fspath(self._path(key))

    def _path(self, key: str) -> Path:
        check_key(key)
        if key.rpartition("/")[2].startswith(_TEMP_MARK):
            raise ConfigError(
                f"Invalid object key {key!r}: names starting with {_TEMP_MARK!r} are reserved "
                "for the store's temporary files."
            )
        return self._root / key

    def _write_temp(self, key: str, path: Path, data: bytes) -> Path:
        """Write ``data`` to a new temporary file beside ``path`` and return its path."""
        temp = path.with_name(f"{_TEMP_MARK}{secrets.token_hex(8)}")
        for attempt in range(_DIRECTORY_RACE_RETRIES):
            try:
                make_private_dirs(path.parent)
                fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
                break
            except FileNotFoundError:
                if attempt == _DIRECTORY_RACE_RETRIES - 1:
                    raise StorageError(
                        f"Could not create the directory for {key!r} in store {self.uri}: "
                        "it kept disappearing while being created."
                    ) from None
            except OSError as exc:
                if exc.errno in (errno.ENOTDIR, errno.EEXIST):
                    raise StorageError(
                        f"Cannot write {key!r} to store {self.uri}: part of its path is an "
                        "existing object, so it cannot also be a directory."
                    ) from exc
                raise _failed("write", key, self.uri, exc) from exc
        try:
            try:
                os.fchmod(fd, FILE_MODE)  # 0600 whatever the umask
            except BaseException:
                os.close(fd)
                raise
            with os.fdopen(fd, "wb") as file:
                file.write(data)
        except BaseException as exc:
            _unlink_quietly(temp)  # nothing half-written stays behind
            if isinstance(exc, OSError):
                raise _failed("write", key, self.uri, exc) from exc
            raise
        return temp


def _failed(verb: str, key: str, uri: str, exc: OSError) -> StoreError:
    """The error for an operation the file system refused, with what to do about a full disk."""
    hint = ""
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        hint = " The disk is full: free some space, or point KINETIC_HOME at a disk with room."
    return StoreError(f"Could not {verb} {key!r} in store {uri}: {exc}.{hint}", key=key, cause=exc)


def _unlink_quietly(path: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
