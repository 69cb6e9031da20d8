"""A private mount namespace for one job: its volumes at their absolute paths, seen by it alone.

A local job that asks for ``volumes={"/data": Data(...)}`` must find its data at ``/data``
without anything being written to this machine's ``/``, and without other processes seeing
it. So the job's process moves into its own mount namespace (plus a user namespace when it is
not root, which is what lets an ordinary user mount there) and bind-mounts each volume's
source at its path. A path whose parent directories do not exist (``/data`` on most machines)
is made inside a *shadow* of its nearest existing ancestor: a ``tmpfs`` that holds a bind of
every entry of the original, plus the new directories, mounted over that ancestor (for ``/``,
made the process's new root). Every mount is private, so nothing propagates back out.

The same namespace holds a local job's code (:mod:`kinetic_runtime.bundle_trees`): an overlay
of this machine's shared unpacked tree of its bundle, at its working directory. A process
makes its namespace once (:func:`make_private`); volumes mounted after the overlay go in the
same one.

Linux only, and only where user namespaces are allowed (``kernel.unprivileged_userns_clone``,
AppArmor's ``apparmor_restrict_unprivileged_userns``): :func:`probe` says whether this machine
can, so the client refuses such volumes at submit instead of failing in the job.

Standard library only (``ctypes`` for ``unshare`` and ``mount``): the runtime stays light, and
the node agent of the test suite uses the same code to give a pod its ``emptyDir`` volumes.

    python -m kinetic_runtime.data.namespace --probe EMPTY_DIRECTORY
"""

import contextlib
import ctypes
import errno
import functools
import os
import sys
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from kinetic_protocol.errors import ConfigError

__all__ = ["Bind", "NamespaceError", "enter", "make_private", "mount_overlay", "probe", "seal"]

_CLONE_NEWNS = 0x00020000
_CLONE_NEWUSER = 0x10000000
_MS_RDONLY, _MS_NOSUID, _MS_NODEV, _MS_NOEXEC = 1, 2, 4, 8
_MS_REMOUNT, _MS_BIND, _MS_MOVE, _MS_REC, _MS_PRIVATE = 32, 4096, 8192, 16384, 1 << 18
_MNT_DETACH = 2
_KEPT_FLAGS = {  # statvfs flag -> mount flag a remount must repeat (locked in a user namespace)
    os.ST_NOSUID: _MS_NOSUID,
    os.ST_NODEV: _MS_NODEV,
    os.ST_NOEXEC: _MS_NOEXEC,
}
_LIBC = ctypes.CDLL(None, use_errno=True) if sys.platform.startswith("linux") else None


class NamespaceError(ConfigError):
    """This machine (or this process) cannot give a job a private mount namespace."""


@dataclass(frozen=True)
class Bind:
    """``source`` (an existing file or directory) appears at the absolute path ``target``."""

    source: Path
    target: str
    read_only: bool = False


def _call(name: str, *args: object) -> None:
    assert _LIBC is not None
    function = getattr(_LIBC, name)
    encoded = [a.encode() if isinstance(a, str) else a for a in args]
    if function(*encoded) != 0:
        code = ctypes.get_errno()
        shown = ", ".join(repr(a) for a in args if a is not None and not isinstance(a, int))
        raise OSError(code, f"{name}({shown}): {os.strerror(code)}")


def _mount(source: str | None, target: str, flags: int, fstype: str | None = None) -> None:
    _call("mount", source, target, fstype, ctypes.c_ulong(flags), None)


def _unshare() -> None:
    """Enter new mount (and, unless root, user) namespaces mapping this uid/gid to themselves."""
    uid, gid = os.geteuid(), os.getegid()
    _call("unshare", _CLONE_NEWNS if uid == 0 else _CLONE_NEWNS | _CLONE_NEWUSER)
    if uid != 0:
        Path("/proc/self/setgroups").write_text("deny")
        Path("/proc/self/uid_map").write_text(f"{uid} {uid} 1")
        Path("/proc/self/gid_map").write_text(f"{gid} {gid} 1")
    _mount(None, "/", _MS_REC | _MS_PRIVATE)


def _bind(source: Path, target: Path, *, read_only: bool) -> None:
    _mount(str(source), str(target), _MS_BIND | _MS_REC)
    if read_only:
        kept = sum(m for s, m in _KEPT_FLAGS.items() if os.statvfs(target).f_flag & s)
        _mount(None, str(target), _MS_REMOUNT | _MS_BIND | _MS_RDONLY | kept)


def seal(path: Path) -> None:
    """Make ``path`` read-only for this process (in its own namespace: :func:`make_private`)."""
    _bind(path, path, read_only=True)


@functools.cache  # once it has succeeded: the process is in its namespace for good
def make_private() -> None:
    """Move this process into a mount namespace of its own, unless it is in one already.

    Raises :class:`NamespaceError` where it cannot (not Linux, more than one thread) and
    ``OSError`` where the kernel refuses; the process is then unchanged, except in the unlikely
    case that the kernel allowed the namespace and then refused to make its mounts private."""
    if _LIBC is None:
        raise NamespaceError(f"mount namespaces are Linux-only; this is {sys.platform}")
    if threading.active_count() > 1:
        raise NamespaceError(
            f"cannot make a private mount namespace: the job already runs "
            f"{threading.active_count()} threads, and unshare needs exactly one."
        )
    _unshare()


def mount_overlay(lower: Path, upper: Path, work: Path, target: Path) -> None:
    """Show ``lower`` at ``target``, read-only underneath: whatever is written at ``target``
    lands in ``upper`` (``work``: the overlay's scratch, on ``upper``'s file system). In this
    process's own namespace only (:func:`make_private` first). Paths holding a comma, a colon
    or a backslash are refused (they would be read as separators of the options)."""
    paths = (lower, upper, work)
    odd = [str(p) for p in paths if any(c in str(p) for c in ",:\\")]
    if odd:
        raise NamespaceError(f"an overlay cannot name {odd[0]!r} (a comma, colon or backslash)")
    options = f"lowerdir={lower},upperdir={upper},workdir={work}"
    if os.geteuid() != 0:
        options += ",userxattr"  # a user namespace may not write trusted.* attributes
    try:
        # What lands above is scratch: its unmount must not sync the whole upper file system.
        _call("mount", "overlay", str(target), "overlay", ctypes.c_ulong(0), f"{options},volatile")
    except OSError as exc:
        if exc.errno != errno.EINVAL:
            raise
        _call("mount", "overlay", str(target), "overlay", ctypes.c_ulong(0), options)  # < 5.10


def _placeholder(path: Path, *, directory: bool) -> None:
    if directory:
        path.mkdir()
    else:
        path.touch()


def _copy_entry(entry: os.DirEntry[str], inside: Path) -> None:
    """``entry`` at ``inside``: a symlink copied as one, anything else bind-mounted."""
    if entry.is_symlink():
        os.symlink(os.readlink(entry.path), inside)
        return
    _placeholder(inside, directory=entry.is_dir())
    _mount(entry.path, str(inside), _MS_BIND | _MS_REC)


def _remove_placeholder(inside: Path) -> None:
    """Take back the stand-in made for an entry that has vanished: the job sees no name
    that no longer exists."""
    with contextlib.suppress(FileNotFoundError):
        if inside.is_dir() and not inside.is_symlink():
            inside.rmdir()
        else:
            inside.unlink()


class _Builder:
    """Applies binds one by one, shadowing ancestors where a mount point must be created."""

    def __init__(self, workspace: Path) -> None:
        self._workspace = workspace
        self._staging: list[Path] = []

    def bind(self, bind: Bind) -> None:
        target = Path(bind.target)
        directory = bind.source.is_dir()
        if not (target.is_dir() if directory else target.exists() and not target.is_dir()):
            if target.exists() or target.is_symlink():
                kind = "a directory" if directory else "a file"
                raise NamespaceError(
                    f"Cannot mount {bind.source} at {target}: {target} exists on this machine "
                    f"and is not {kind}. Choose another volume path."
                )
            ancestor = next(p for p in target.parents if p.is_dir())
            self._shadow(ancestor)
            for missing in reversed([p for p in target.parents if not p.exists()]):
                missing.mkdir()
            _placeholder(target, directory=directory)
        _bind(bind.source, target, read_only=bind.read_only)

    def _shadow(self, directory: Path) -> None:
        """Replace ``directory``, in this namespace only, by a writable copy of itself: a tmpfs
        holding a bind of each original entry (symlinks are copied as symlinks). An entry
        deleted between the listing and its mount (``/tmp`` changes all the time) is left
        out; any other failure fails the job."""
        import tempfile  # loaded by volumes alone: a job overlaying its code has no use for it

        # A name of its own: the workspace may hold an earlier start's shadows (a container
        # restarted in the same pod enters again with the same workspace).
        staging = Path(tempfile.mkdtemp(prefix="shadow-", dir=self._workspace))
        self._staging.append(staging)
        _mount("tmpfs", str(staging), 0, "tmpfs")
        with os.scandir(directory) as entries:
            for entry in entries:
                inside = staging / entry.name
                try:
                    _copy_entry(entry, inside)
                except FileNotFoundError:
                    if os.path.lexists(entry.path):
                        raise
                    # Deleted since it was listed (another process's temporary file, say): it
                    # is gone for the job too, so leave no empty stand-in for it.
                    _remove_placeholder(inside)
        if directory == Path("/"):
            cwd = os.getcwd()
            os.chdir(staging)
            _mount(str(staging), "/", _MS_MOVE)
            os.chroot(".")
            os.chdir(cwd)
        else:
            _mount(str(staging), str(directory), _MS_MOVE)

    def finish(self) -> None:
        """Hide the staging directories from the job (a shadow of ``/`` binds the workspace
        too, so it would show a copy of its own tmpfs there)."""
        for staging in self._staging:
            if os.path.ismount(staging):
                with contextlib.suppress(OSError):
                    _call("umount2", str(staging), _MNT_DETACH)


def enter(binds: Sequence[Bind], workspace: Path) -> None:
    """Move this process into its own mount namespace with ``binds`` in place.

    ``workspace`` is an empty directory of the job's (removed with the job) where shadows are
    staged; the machine only ever sees empty directories there. Must run while the process
    has a single thread (the kernel refuses ``unshare`` otherwise), so before any download
    starts, unless the process made its namespace already (its code overlaid). Nested
    targets are applied outermost first.
    """
    if _LIBC is None:
        raise NamespaceError(
            f"volumes on the local backend need Linux mount namespaces; this is {sys.platform}. "
            "Pass the kinetic.Data as a function argument instead (the function receives its "
            "path), or run on a Kubernetes backend."
        )
    try:
        make_private()
    except OSError as exc:
        raise NamespaceError(
            f"this machine does not let a job make a private mount namespace ({exc}), which "
            "local volumes need. Allow unprivileged user namespaces (sysctl "
            "kernel.unprivileged_userns_clone=1 / kernel.apparmor_restrict_unprivileged_userns=0), "
            "or pass the kinetic.Data as a function argument instead."
        ) from exc
    builder = _Builder(workspace)
    try:
        for bind in sorted(binds, key=lambda b: len(Path(b.target).parts)):
            builder.bind(bind)
    except OSError as exc:
        raise NamespaceError(f"could not mount a volume: {exc}") from exc
    finally:
        builder.finish()


def _probe_here(workspace: Path) -> None:
    """Mount a directory at a path that does not exist under ``/``, and read it back."""
    source = workspace / "source"
    source.mkdir()
    (source / "ok").write_text("ok")
    staging = workspace / "staging"
    staging.mkdir()
    target = f"/kinetic-probe-{os.getpid()}/data"
    enter([Bind(source, target, read_only=True)], staging)
    if Path(target, "ok").read_text() != "ok":
        raise NamespaceError("the probe's bind mount did not show its file")


def probe(python: str = sys.executable) -> str | None:
    """None if a job started with ``python`` can have private mounts here, else why not.

    Runs in a child process: ``unshare`` changes the process that calls it for good.
    """
    if _LIBC is None:
        return f"mount namespaces are Linux-only; this is {sys.platform}"
    import subprocess  # only the client probes; a job never does
    import tempfile

    with tempfile.TemporaryDirectory(prefix="kinetic-probe-") as workspace:
        done = subprocess.run(
            [python, "-m", "kinetic_runtime.data.namespace", "--probe", workspace],
            capture_output=True,
            text=True,
            check=False,
            timeout=60,
        )
    if done.returncode == 0:
        return None
    return (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[-1]


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] != "--probe":
        sys.exit("usage: python -m kinetic_runtime.data.namespace --probe EMPTY_DIRECTORY")
    try:
        _probe_here(Path(sys.argv[2]))
    except (NamespaceError, OSError) as error:
        sys.exit(str(error))
