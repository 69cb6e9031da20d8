"""``python -m kinetic_testing.enter_image PLAN -- ARGV...``: run a pod's command inside the root
file system of its image (see :mod:`kinetic_testing.images.pods`).

As root: a private mount namespace; ``/proc``, ``/dev`` and ``/sys`` and the pod's volume binds
mounted into the root (targets resolved inside it, links included); ``/etc/resolv.conf`` copied
in (the host network is the pod's); then ``chroot``, the image's ``WORKDIR``, the pod's group,
``fsGroup`` and user, and ``exec`` with ``PATH`` of the environment the kubelet gave (the
image's). Standard library only; imported by nothing, so
``-m`` prints no warning into the pod's log.
"""

import ctypes
import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

_CLONE_NEWNS = 0x00020000
_MS_RDONLY, _MS_REMOUNT, _MS_BIND, _MS_REC, _MS_PRIVATE = 1, 32, 4096, 16384, 1 << 18
_LIBC = ctypes.CDLL(None, use_errno=True)


def _check(result: int, what: str) -> None:
    if result != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"{what}: {os.strerror(errno)}")


def _bind(source: str, target: Path, *, read_only: bool = False, recursive: bool = False) -> None:
    if Path(source).is_dir():
        target.mkdir(parents=True, exist_ok=True)
    else:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.touch(exist_ok=True)
    flags = _MS_BIND | (_MS_REC if recursive else 0)
    _check(_LIBC.mount(source.encode(), str(target).encode(), None, flags, None), f"bind {source}")
    if read_only:
        flags = _MS_BIND | _MS_REMOUNT | _MS_RDONLY
        _check(_LIBC.mount(None, str(target).encode(), None, flags, None), f"read-only {target}")


def _inside(rootfs: Path, target: str) -> Path:
    """``target`` resolved inside ``rootfs``: its symbolic links (``/var/run`` -> ``/run``)
    followed as the container would see them, never out onto this machine's paths."""
    parts = [p for p in target.split("/") if p]
    resolved = rootfs
    for _ in range(64):  # bounds a link loop
        if not parts:
            return resolved
        part = parts.pop(0)
        if part in (".", ".."):
            resolved = resolved.parent if part == ".." and resolved != rootfs else resolved
            continue
        step = resolved / part
        if step.is_symlink():
            link = os.readlink(step)
            parts = [p for p in link.split("/") if p] + parts
            resolved = rootfs if link.startswith("/") else resolved
            continue
        resolved = step
    raise OSError(f"too many symbolic links resolving {target} in {rootfs}")


def _enter_and_exec(plan: dict[str, Any], argv: list[str]) -> None:
    rootfs = Path(plan["rootfs"])
    _check(_LIBC.unshare(_CLONE_NEWNS), "unshare(CLONE_NEWNS)")
    _check(_LIBC.mount(None, b"/", None, _MS_REC | _MS_PRIVATE, None), "make / private")
    for system in ("/proc", "/dev", "/sys"):
        _bind(system, _inside(rootfs, system), recursive=True)
    for bind in plan["binds"]:
        inside = _inside(rootfs, bind["target"])
        _bind(bind["source"], inside, read_only=bool(bind["read_only"]))
    resolv = rootfs / "etc/resolv.conf"
    if Path("/etc/resolv.conf").exists() and not resolv.is_symlink():
        shutil.copyfile("/etc/resolv.conf", resolv)
    os.chroot(rootfs)
    os.chdir(plan["workdir"] or "/")
    os.setgroups([int(group) for group in plan["groups"]])
    os.setgid(int(plan["gid"]))
    os.setuid(int(plan["uid"]))
    os.execvpe(argv[0], argv, os.environ)


if __name__ == "__main__":
    _enter_and_exec(json.loads(sys.argv[1]), sys.argv[3:])
