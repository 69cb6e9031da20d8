"""One unpacked tree per code bundle on this machine, which each local job of that bundle sees
at its working directory through an overlay mount instead of unpacking the bundle again.

Unpacking a project of a few hundred files costs a local job tens of milliseconds of file
creation, most of its start; an overlay mount costs under one. The job's process moves into a
mount namespace of its own (:mod:`kinetic_runtime.data.namespace`) and mounts there::

    lower   <cache>/<sha256>/           the bundle's files, shared, never written once made
    upper   <workdir>-overlay/upper/    whatever the job writes at its workdir lands here
    work    <workdir>-overlay/work/     the overlay's scratch

The tree is read-only to the job, at its own path too (a read-only bind in the same
namespace). No other process sees the mounts, and they end with the job's last process. Seen
from outside (the supervisor, the client) the workdir is an empty directory and the job's own
writes are in ``upper``; deleting the job's directory deletes them.

The cache (``KINETIC_BUNDLE_CACHE``, which the local backend sets to
``$KINETIC_HOME/local/bundles``)::

    <sha256>.<boot>/       a tree, unpacked into ``.staging-*`` (and checked as
                           :func:`~kinetic_runtime.workspace.unpack_bundle` checks every
                           bundle), then renamed into place: two jobs racing both unpack, one
                           rename wins
    <sha256>.<boot>.lock   held (``flock``, shared) by each job process that uses the tree, for
                           its whole life; its modification time is the tree's last use

``<boot>`` is this machine's boot id. A tree's files are not synced to disk (that would cost
each new version of a project seconds), so after a crash one may lack what its maker wrote: a
tree is used only in the boot that made it, and one of an earlier boot is deleted as any
unused tree is.

A job whose tree is there does not read its bundle from the store at all: the tree was made
from bytes verified against the same digest, which its signed call pins.

Deletion: a tree not used for :data:`UNUSED_DAYS` days, or not among the :data:`KEEP_TREES`
used last, is deleted by the next job that has to unpack a new tree, under its lock taken
exclusively, so never while a job holds it, however old that job is.

Where the overlay cannot be made (not Linux, a kernel or a file system that refuses it, a
process that may not make a mount namespace) the job unpacks its bundle into its workdir as
before (:func:`place_bundle`), saying why in a debug log line only; so does a debug job, whose
files a debugger on this machine must be able to open, a job that would need a user namespace
for it alone (``kinetic_runtime.job``), and a bundle under
:data:`SHARED_FROM_BYTES`, whose few files cost less to write than a namespace.

Standard library only at import: the local supervisor removes overlaid workdirs with it.
"""

import contextlib
import errno
import fcntl
import functools
import math
import os
import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path

__all__ = [
    "KEEP_TREES",
    "SHARED_FROM_BYTES",
    "UNUSED_DAYS",
    "overlay_dir",
    "place_bundle",
    "prune",
    "remove_workdir",
    "tree_of",
    "use_tree",
]

SHARED_FROM_BYTES = 64 * 1024
"""A smaller bundle (a module or a few) is unpacked: its handful of files costs less than a
mount namespace, whose making and teardown at the job's end take 2-4 ms on a busy machine."""
UNUSED_DAYS = 7
KEEP_TREES = 16
"""A machine keeps the trees used last (and any a job holds), each of a project's size."""
_STAGING = ".staging-"
_DELETING = ".deleting-"
_LOCK = ".lock"
_LEFTOVER_SECONDS = 3600.0
"""A staging or deleting directory this old was left by a process killed halfway."""
_HELD: list[int] = []
"""The locks of the trees this process uses: open until it exits."""


def place_bundle(
    fetch: Callable[[], bytes], digest: str, size: int, workdir: Path, shared: bool = True
) -> None:
    """The files of the bundle whose sha256 is ``digest`` (``size`` bytes) at ``workdir``:
    this machine's tree of it overlaid there where the job has a bundle cache, the bundle is
    not tiny and the overlay can be made (and is wanted: ``shared``), else unpacked there.
    ``fetch`` reads and verifies the bundle: called only if its tree is yet to be made, or
    for an unpack."""
    from kinetic_runtime import settings
    from kinetic_runtime.workspace import unpack_bundle

    once = functools.cache(fetch)
    cache = settings.BUNDLE_CACHE.from_env()
    wanted = shared and size >= SHARED_FROM_BYTES
    if cache and wanted and _overlaid(Path(cache), digest, once, workdir):
        return
    unpack_bundle(once(), workdir)


def _overlaid(cache: Path, digest: str, fetch: Callable[[], bytes], workdir: Path) -> bool:
    from kinetic_runtime.data.namespace import NamespaceError

    reason = _refusal()
    if reason is None:
        try:
            _overlay_tree(cache, digest, fetch, workdir)
            return True
        except (NamespaceError, OSError) as exc:  # a bundle's own error goes on up
            reason = str(exc)
    import logging

    logging.getLogger(__name__).debug("unpacking the bundle into %s: %s", workdir, reason)
    return False


@functools.cache
def _refusal() -> str | None:
    """Why this process cannot overlay a tree, as far as is known without trying; else None."""
    if not sys.platform.startswith("linux"):
        return f"overlay mounts are Linux-only; this is {sys.platform}"
    if os.geteuid() != 0 and _kernel() < (5, 11):
        return f"kernel {os.uname().release} has no overlay mounts in a user namespace (5.11+)"
    return None


def _kernel() -> tuple[int, ...]:
    release = os.uname().release.split("-")[0].split(".")
    return tuple(int(part) for part in release[:2] if part.isdigit())


def overlay_dir(workdir: Path) -> Path:
    """Where an overlaid workdir's own files are (``upper``) and the overlay's scratch."""
    return workdir.with_name(f"{workdir.name}-overlay")


def remove_workdir(workdir: Path) -> None:
    """Remove a job's workdir and what an overlay kept of it, for a fresh run."""
    shutil.rmtree(workdir, ignore_errors=True)
    shutil.rmtree(overlay_dir(workdir), ignore_errors=True)


def _overlay_tree(cache: Path, digest: str, fetch: Callable[[], bytes], workdir: Path) -> None:
    """Overlay the bundle's tree at ``workdir``, in a mount namespace made first: a process
    that may not make one leaves nothing behind. The tree is read-only to the job, even
    through its own path."""
    from kinetic_runtime.data.namespace import NamespaceError, make_private, mount_overlay, seal

    workdir.mkdir(parents=True, exist_ok=True)
    with os.scandir(workdir) as entries:
        if next(entries, None) is not None:
            raise NamespaceError(f"{workdir} is not empty: an overlay would hide what it holds")
    make_private()
    own = overlay_dir(workdir)
    own.mkdir()  # a run before left one: refused (FileExistsError), so never reused
    (own / "upper").mkdir()
    (own / "work").mkdir()
    tree = use_tree(cache, digest, fetch)
    mount_overlay(tree, own / "upper", own / "work", workdir)
    seal(tree)
    with contextlib.suppress(FileNotFoundError):
        _open_to_owner(own / "work" / "work")


def _open_to_owner(directory: Path) -> None:
    """Make the overlay's scratch 0700 (0600 its files), as everything in a job's directory
    is: the kernel makes it mode 000, and an owner who is not root could not even list it, so
    removing the job's directory would fail."""
    os.chmod(directory, 0o700)
    with os.scandir(directory) as entries:
        found = [(Path(e.path), e.is_dir(follow_symlinks=False)) for e in entries]
    for path, is_dir in found:
        if is_dir:
            _open_to_owner(path)
        else:
            os.chmod(path, 0o600)  # the kernel's own marker files: never a link


def tree_of(cache: Path, digest: str) -> Path:
    """Where the tree of the bundle whose sha256 is ``digest`` is, made since this boot."""
    return cache / f"{digest}.{_boot_id()}"


@functools.cache
def _boot_id() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:  # never a tree of an earlier boot: none outlives this process
        return f"process-{os.getpid()}-{time.time_ns()}"


def use_tree(cache: Path, digest: str, fetch: Callable[[], bytes]) -> Path:
    """This machine's unpacked tree of the bundle whose sha256 is ``digest``, made from what
    ``fetch`` returns (verified bytes) if there is none; held in use by this process until it
    exits. A bundle that ``unpack_bundle`` refuses leaves nothing in the cache."""
    cache.mkdir(mode=0o700, parents=True, exist_ok=True)
    tree = tree_of(cache, digest)
    if not tree.is_dir():  # made before its lock is taken: a refused bundle leaves no lock
        _make_tree(cache, tree.name, fetch())
        prune(cache)
    _hold(_lock_of(cache, tree.name))
    if not tree.is_dir():  # deleted in between, unused for days before this job made it
        _make_tree(cache, tree.name, fetch())
    return tree


def _lock_of(cache: Path, tree: str) -> Path:
    """The lock that the jobs using the tree named ``tree`` hold, stamped at each use."""
    return cache / f"{tree}{_LOCK}"


def _hold(lock: Path) -> None:
    """Take ``lock`` shared and stamp its use; one a deletion unlinked meanwhile is made anew."""
    while True:
        fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        fcntl.flock(fd, fcntl.LOCK_SH)
        if _is_file_at(fd, lock):
            os.utime(fd)
            _HELD.append(fd)
            return
        os.close(fd)


def _is_file_at(fd: int, path: Path) -> bool:
    try:
        named = os.stat(path)
    except FileNotFoundError:
        return False
    held = os.fstat(fd)
    return (named.st_dev, named.st_ino) == (held.st_dev, held.st_ino)


def _make_tree(cache: Path, name: str, data: bytes) -> None:
    import tempfile

    from kinetic_runtime.workspace import unpack_bundle

    staging = Path(tempfile.mkdtemp(prefix=f"{_STAGING}{name}-", dir=cache))
    try:
        unpack_bundle(data, staging)
        try:
            os.rename(staging, cache / name)
        except OSError as exc:  # another job's rename won: the same bytes, so its tree serves
            if exc.errno not in (errno.EEXIST, errno.ENOTEMPTY):
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def prune(cache: Path, *, now: float | None = None) -> None:
    """Delete the trees no job holds that were not used for :data:`UNUSED_DAYS` days or are not
    among the :data:`KEEP_TREES` used last, and what killed processes left half made or half
    deleted."""
    now = time.time() if now is None else now
    with os.scandir(cache) as entries:
        found = list(entries)
    trees = set()
    for entry in found:
        if entry.name.startswith((_STAGING, _DELETING)):
            with contextlib.suppress(FileNotFoundError):
                if entry.stat().st_mtime < now - _LEFTOVER_SECONDS:
                    shutil.rmtree(entry.path, ignore_errors=True)
        else:
            trees.add(entry.name.removesuffix(_LOCK))
    last_use = {tree: _last_use(_lock_of(cache, tree), now) for tree in trees}
    ranked = sorted(trees, key=last_use.__getitem__, reverse=True)
    for rank, tree in enumerate(ranked):
        used_before = now - UNUSED_DAYS * 86400
        if rank >= KEEP_TREES:  # unless used since it was ranked
            used_before = math.nextafter(last_use[tree], math.inf)
        _delete_if_unused(cache, tree, used_before)


def _last_use(lock: Path, now: float) -> float:
    try:
        return lock.stat().st_mtime
    except FileNotFoundError:  # a tree whose maker was killed before it took the lock
        return now


def _delete_if_unused(cache: Path, tree: str, used_before: float) -> None:
    """Delete the tree named ``tree`` (and its lock) if no job holds it and its last use was
    before ``used_before``; a tree that lost its lock (its maker killed) gets a new one,
    used now."""
    lock = _lock_of(cache, tree)
    fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    doomed = cache / f"{_DELETING}{tree}-{os.getpid()}"
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return  # a job uses it
        if not _is_file_at(fd, lock) or os.fstat(fd).st_mtime >= used_before:
            return
        with contextlib.suppress(FileNotFoundError):
            os.rename(cache / tree, doomed)
        os.unlink(lock)
    finally:
        os.close(fd)
    shutil.rmtree(doomed, ignore_errors=True)
