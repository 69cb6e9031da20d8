"""An object store in a local directory: what the local backend and tests use.

Readers never see a half-written object: every write goes to a temporary file in the target's
own directory and is then renamed (overwrite) or hard-linked (create-only) into place. The
hard link fails if the target exists, which makes create-only writes race-free between threads
and processes. Temporary files carry a reserved name and never show up in :meth:`list`.

Nothing under the root is ever reached through a symbolic link. In a shared store any writer
could replace a directory (``jobs/<id>/``) with a link to somewhere else, a home directory say,
and following it would read, write or delete there. So every operation opens its path one
component at a time, each relative to its parent's descriptor and with ``O_NOFOLLOW``: a link
met at any depth, even one swapped in mid-operation, is refused instead of followed. Links are
never objects: :meth:`list` skips them, :meth:`delete_prefix` removes the link itself, and a
read, write or delete through one raises :class:`StoreError` naming the key. The root itself
may be reached through links (a ``KINETIC_HOME`` on a linked directory); only links *under* it
are refused.
"""

import contextlib
import errno
import os
import secrets
import stat
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import BinaryIO

from kinetic_protocol.errors import (
    ConfigError,
    ObjectNotFoundError,
    PreconditionFailedError,
    StorageError,
    StoreError,
)
from kinetic_runtime.private_files import DIR_MODE, FILE_MODE, make_private_dirs
from kinetic_runtime.stores._keys import check_key, check_prefix

__all__ = ["LocalStore"]

_TEMP_MARK = ".kinetic-tmp-"
# A writer may lose its freshly made directory to a concurrent delete_prefix that prunes it.
_DIRECTORY_RACE_RETRIES = 5
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
# O_NONBLOCK: a FIFO planted at a key must not hang its reader (it is then refused by fstat).
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
_CREATE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


# What a scan finds: (key, is_link, directory descriptor, name in that directory).
_Found = tuple[str, bool, int, str]


class _LinkRefusedError(StoreError):
    """A symbolic link under the root stood where a directory or an object was expected."""

    def __init__(self, link: str, key: str, uri: str) -> None:
        super().__init__(
            f"Refused to follow the symbolic link {link!r} in store {uri} (for {key!r}): "
            "nothing under a store's root is reached through a link, since it could point "
            "anywhere, such as another user's files. Remove the link; if the store is shared, "
            "check who else can write to it.",
            key=key,
        )
        self.link = link


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
        with self.open(key) as file:
            try:
                return file.read()
            except OSError as exc:
                raise _failed("read", key, self.uri, exc) from exc

    def open(self, key: str) -> BinaryIO:
        """The object as a file to read from (for one too large to hold in memory), opened as
        :meth:`read` opens it: through no link, and only if it is a regular file."""
        parts = self._parts(key)
        try:
            with contextlib.closing(_Fd(self._open_dir(parts[:-1], key))) as parent:
                fd = os.open(parts[-1], _READ_FLAGS, dir_fd=parent.fd)
            file = os.fdopen(fd, "rb")
            mode = os.fstat(file.fileno()).st_mode
            if not stat.S_ISREG(mode):
                file.close()
                if stat.S_ISDIR(mode):
                    raise FileNotFoundError(errno.ENOENT, "a directory")
                raise StoreError(
                    f"Cannot read {key!r} from store {self.uri}: it is not a regular "
                    "file (a FIFO, socket or device put there by hand?). Remove it.",
                    key=key,
                )
            return file
        except (FileNotFoundError, NotADirectoryError):
            raise ObjectNotFoundError(f"No object {key!r} in store {self.uri}") from None
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise _LinkRefusedError(key, key, self.uri) from None
            raise _failed("read", key, self.uri, exc) from exc

    def write(self, key: str, data: bytes, *, if_absent: bool = False) -> None:
        parts = self._parts(key)
        name = parts[-1]
        with contextlib.closing(_Fd(self._make_dirs(key, parts[:-1]))) as parent:
            temp = self._write_temp(key, parent.fd, data)
            try:
                if if_absent:
                    os.link(
                        temp,
                        name,
                        src_dir_fd=parent.fd,
                        dst_dir_fd=parent.fd,
                        follow_symlinks=False,
                    )
                else:
                    os.replace(temp, name, src_dir_fd=parent.fd, dst_dir_fd=parent.fd)
            except FileExistsError:
                if _is_link(parent.fd, name):
                    raise _LinkRefusedError(key, key, self.uri) from None
                raise PreconditionFailedError(
                    f"Object {key!r} already exists in store {self.uri}; it is written only once."
                ) from None
            except OSError as exc:
                raise _failed("write", key, self.uri, exc) from exc
            finally:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(temp, dir_fd=parent.fd)

    def exists(self, key: str) -> bool:
        parts = self._parts(key)
        try:
            with contextlib.closing(_Fd(self._open_dir(parts[:-1], key))) as parent:
                mode = os.stat(parts[-1], dir_fd=parent.fd, follow_symlinks=False).st_mode
        except (FileNotFoundError, NotADirectoryError):
            return False
        except OSError as exc:
            raise _failed("check", key, self.uri, exc) from exc
        if stat.S_ISLNK(mode):
            raise _LinkRefusedError(key, key, self.uri)
        return stat.S_ISREG(mode)

    def links(self, prefix: str) -> list[str]:
        """The symbolic links under ``prefix`` (which :meth:`list` skips: they are never
        objects), so that a reader can name what it left out."""
        check_prefix(prefix)
        return sorted(
            key for key, is_link, _fd, _name in self._scan(prefix, links_too=True) if is_link
        )

    def list(self, prefix: str) -> list[str]:
        check_prefix(prefix)
        return sorted(key for key, is_link, _fd, _name in self._scan(prefix) if not is_link)

    def delete(self, key: str) -> None:
        parts = self._parts(key)
        try:
            with contextlib.closing(_Fd(self._open_dir(parts[:-1], key))) as parent:
                os.unlink(parts[-1], dir_fd=parent.fd)  # a link at the key: only it goes
        except (FileNotFoundError, NotADirectoryError):
            return
        except OSError as exc:
            raise _failed("delete", key, self.uri, exc) from exc

    def delete_prefix(self, prefix: str) -> int:
        check_prefix(prefix)
        removed = 0
        emptied: set[str] = set()
        for key, is_link, fd, name in self._scan(prefix, links_too=True):
            try:
                os.unlink(name, dir_fd=fd)  # never follows: a link is removed, not its target
            except FileNotFoundError:
                continue  # another deleter got there first; it counts it
            except OSError as exc:
                raise _failed("delete", key, self.uri, exc) from exc
            removed += 0 if is_link else 1
            emptied.add(key.rpartition("/")[0])
        directory = prefix.rpartition("/")[0]
        if prefix.endswith("/") and directory:
            # The directory the prefix names may itself be a link: remove that link.
            with contextlib.suppress(OSError, StoreError):
                parts = directory.split("/")
                with contextlib.closing(_Fd(self._open_dir(parts[:-1], prefix))) as parent:
                    if _is_link(parent.fd, parts[-1]):
                        os.unlink(parts[-1], dir_fd=parent.fd)
        self._prune(emptied)
        return removed

    def url(self, key: str) -> str:
        """The object's path, for code that opens it itself (a job's data, its outputs).

        That code follows links, so the path is checked now: a link under the root on the way
        to it is refused. A link put there later is that code's to meet.
        """
        parts = self._parts(key)
        for index in range(len(parts)):
            if self._root.joinpath(*parts[: index + 1]).is_symlink():
                raise _LinkRefusedError("/".join(parts[: index + 1]), key, self.uri)
        return os.fspath(self._root.joinpath(*parts))

    # -- paths, one component at a time -----------------------------------------------------

    def _parts(self, key: str) -> Sequence[str]:
        check_key(key)
        if key.rpartition("/")[2].startswith(_TEMP_MARK):
            raise ConfigError(
                f"Invalid object key {key!r}: names starting with {_TEMP_MARK!r} are reserved "
                "for the store's temporary files."
            )
        return key.split("/")

    def _open_dir(self, parts: Sequence[str], key: str, *, create: bool = False) -> int:
        """A descriptor of the directory ``parts`` names under the root, no link followed.

        ``FileNotFoundError`` if it is missing (and not ``create``), ``NotADirectoryError`` if
        part of it is a file, :class:`_LinkRefusedError` if part of it is a link."""
        fd = os.open(self._root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            for index, name in enumerate(parts):
                try:
                    try:
                        child = os.open(name, _DIR_FLAGS, dir_fd=fd)
                    except FileNotFoundError:
                        if not create:
                            raise
                        child = _make_dir(fd, name)
                except OSError as exc:
                    if exc.errno in (errno.ENOTDIR, errno.ELOOP) and _is_link(fd, name):
                        link = "/".join(parts[: index + 1])
                        raise _LinkRefusedError(link, key, self.uri) from None
                    raise
                os.close(fd)
                fd = child
        except BaseException:
            os.close(fd)
            raise
        return fd

    def _make_dirs(self, key: str, parts: Sequence[str]) -> int:
        """The parent directory of ``key``, made (0700) where missing, as a descriptor."""
        for attempt in range(_DIRECTORY_RACE_RETRIES):
            try:
                if not self._root.is_dir():
                    make_private_dirs(self._root)
                return self._open_dir(parts, key, create=True)
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
        raise AssertionError("unreachable")

    def _write_temp(self, key: str, parent: int, data: bytes) -> str:
        """Write ``data`` to a new temporary file in ``parent`` and return its name."""
        temp = f"{_TEMP_MARK}{secrets.token_hex(8)}"
        try:
            fd = os.open(temp, _CREATE_FLAGS, FILE_MODE, dir_fd=parent)
        except OSError as exc:
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
            with contextlib.suppress(FileNotFoundError):
                os.unlink(temp, dir_fd=parent)  # nothing half-written stays behind
            if isinstance(exc, OSError):
                raise _failed("write", key, self.uri, exc) from exc
            raise
        return temp

    def _scan(self, prefix: str, *, links_too: bool = False) -> Iterator[_Found]:
        """``(key, is_link, dir_fd, name)`` for each file (and link) whose key starts with
        ``prefix``; ``dir_fd`` is valid until the next item. Never descends into a link."""
        # Scan only the deepest directory the prefix names; its last segment may be partial.
        directory = prefix.rpartition("/")[0]
        parts = directory.split("/") if directory else []
        try:
            start = self._open_dir(parts, prefix)
        except (OSError, StoreError):
            return  # missing, a file, or a link (delete_prefix removes that one itself)
        base = f"{directory}/" if directory else ""
        with contextlib.closing(_Fd(start)):
            for top, dirnames, filenames, fd in os.fwalk(".", dir_fd=start):
                relative = base + (f"{top[2:]}/" if top != "." else "")
                entries = [*dirnames, *filenames]
                dirnames.clear()  # refilled below with the real directories to descend into
                for name in entries:
                    if name.startswith(_TEMP_MARK) or not (relative + name).startswith(prefix):
                        continue
                    try:
                        mode = os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode
                    except OSError:
                        continue  # gone since it was listed
                    if stat.S_ISDIR(mode):
                        dirnames.append(name)  # fwalk re-checks it is no link when it enters
                    elif stat.S_ISLNK(mode):
                        if links_too:
                            yield relative + name, True, fd, name
                    elif stat.S_ISREG(mode):
                        yield relative + name, False, fd, name

    def _prune(self, emptied: set[str]) -> None:
        """Remove the directories (under the root, never it) left empty by a delete."""
        directories: set[str] = set()
        for emptied_dir in emptied:
            parts = emptied_dir.split("/") if emptied_dir else []
            directories.update("/".join(parts[:depth]) for depth in range(1, len(parts) + 1))
        # Deepest first, so a directory is tried only after its children.
        for directory in sorted(directories, key=lambda d: d.count("/"), reverse=True):
            parts = directory.split("/")
            # Not empty (other keys, or a writer just arrived), a link, or gone: leave it.
            with (
                contextlib.suppress(OSError, StoreError),
                contextlib.closing(_Fd(self._open_dir(parts[:-1], directory))) as parent,
            ):
                os.rmdir(parts[-1], dir_fd=parent.fd)


class _Fd:
    """A descriptor that ``contextlib.closing`` closes."""

    def __init__(self, fd: int) -> None:
        self.fd = fd

    def close(self) -> None:
        os.close(self.fd)


def _make_dir(parent: int, name: str) -> int:
    """Make directory ``name`` in ``parent`` (0700 whatever the umask) and open it."""
    made = False
    with contextlib.suppress(FileExistsError):
        os.mkdir(name, DIR_MODE, dir_fd=parent)
        made = True
    fd = os.open(name, _DIR_FLAGS, dir_fd=parent)  # FileNotFoundError if pruned meanwhile
    if made:
        try:
            os.fchmod(fd, DIR_MODE)
        except BaseException:
            os.close(fd)
            raise
    return fd


def _is_link(parent: int, name: str) -> bool:
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=parent, follow_symlinks=False).st_mode)
    except OSError:
        return False


def _failed(verb: str, key: str, uri: str, exc: OSError) -> StoreError:
    """The error for an operation the file system refused, with what to do about a full disk."""
    hint = ""
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        hint = " The disk is full: free some space, or point KINETIC_HOME at a disk with room."
    return StoreError(f"Could not {verb} {key!r} in store {uri}: {exc}.{hint}", key=key, cause=exc)
