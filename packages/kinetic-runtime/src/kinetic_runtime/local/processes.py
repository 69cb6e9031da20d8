"""Liveness and termination of a local job's process group, portable across Linux and macOS."""

import contextlib
import ctypes
import functools
import os
import select
import signal
import sys
import time
from collections.abc import Collection
from pathlib import Path

__all__ = [
    "await_group_gone",
    "die_with_parent",
    "group_alive",
    "group_members",
    "kill_group_members",
    "machine_identity",
    "may_kill_group",
    "pid_alive",
    "process_identity",
    "same_process_alive",
    "terminate_group",
    "wait_children",
]

_PR_SET_PDEATHSIG = 1
_LIBC = ctypes.CDLL(None, use_errno=True) if sys.platform.startswith("linux") else None
"""Loaded at import, so ``die_with_parent`` does no loading between fork and exec."""


def die_with_parent(parent: int) -> None:
    """Make this process (a job's runtime, just forked) die with ``parent``, its supervisor.

    On Linux the kernel SIGKILLs it when the supervisor exits, however that happens, so a job
    never runs on unsupervised (its status would say FAILED while it stores a result, and its
    slot would be free). If the supervisor is already gone, exit now. Elsewhere the backend
    kills the group when it finds the supervisor dead.
    """
    if _LIBC is not None:
        _LIBC.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:
        os._exit(1)


def _reap(pid: int) -> None:
    """Collect ``pid`` if it is our own exited child, so it does not linger as a zombie."""
    with contextlib.suppress(ChildProcessError, OSError):
        os.waitpid(pid, os.WNOHANG)


def _zombie(pid: int) -> bool:
    """On Linux, whether ``pid`` has exited and only waits to be reaped by its parent."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            return stat.read().rsplit(b")", 1)[1].split()[0] in (b"Z", b"X")
    except (OSError, IndexError):
        return False


def pid_alive(pid: int) -> bool:
    _reap(pid)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return not _zombie(pid)


def _start_ticks(pid: int) -> str | None:
    """When process ``pid`` (live or a zombie) started, in clock ticks since boot; None if
    there is no such process, or no ``/proc`` to tell."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            return stat.read().rsplit(b")", 1)[1].split()[19].decode()
    except (OSError, IndexError):
        return None


def process_identity(pid: int) -> str:
    """``pid`` with its start time (Linux), so a reused pid is not taken for the process."""
    start_ticks = _start_ticks(pid)
    return str(pid) if start_ticks is None else f"{pid}:{start_ticks}"


def _pid_of(identity: str) -> int | None:
    pid, _, _ = identity.partition(":")
    return int(pid) if pid.isascii() and pid.isdigit() else None


def _holds_its_pid(identity: str) -> bool:
    """Whether the process holding ``identity``'s pid now is the one it describes. An identity
    without a start time (recorded where there is no ``/proc``, or an older bare pid) is taken
    for whichever process holds the pid, as nothing better can be told."""
    pid, has_start, _ = identity.partition(":")
    return not has_start or process_identity(int(pid)) == identity


@functools.cache
def machine_identity() -> str:
    """What tells this machine's processes from another's (Linux): the kernel's boot id and
    this process's PID namespace, so two machines (or containers) sharing a hostname never
    read each other's pids as their own. Empty where there is no telling (no ``/proc``)."""
    try:
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
        namespace = os.stat("/proc/self/ns/pid").st_ino
    except OSError:
        return ""
    return f"{boot}/pid:{namespace}" if boot else ""


def same_process_alive(identity: str) -> bool:
    """Whether the process :func:`process_identity` described is still running."""
    pid = _pid_of(identity)
    return pid is not None and pid_alive(pid) and _holds_its_pid(identity)


def may_kill_group(identity: str) -> bool:
    """Whether the process group led by the process ``identity`` describes (a local job's
    supervisor) has live members that are its own, so killing the group kills nothing else.

    Its pid (the group's id) is held by no process: the group's members are what is left of
    it, as Linux never hands out a pid still in use as a process group id. Held by that same
    process (alive or a zombie): its group. Held by a process with another start time: a
    stranger that reused the pid after the group was gone, whose own group it is now.
    """
    pid = _pid_of(identity)
    if pid is None or not group_alive(pid):
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        pass
    return _holds_its_pid(identity)


def group_members(pgid: int) -> list[int] | None:
    """The live (non-zombie) processes of group ``pgid``; None without ``/proc``."""
    try:
        entries = os.listdir("/proc")
    except OSError:
        return None
    members = []
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as stat:
                fields = stat.read().rsplit(b")", 1)[1].split()
        except OSError:
            continue  # exited while we looked
        state, group = fields[0], int(fields[2])
        if group == pgid and state not in (b"Z", b"X"):
            members.append(int(entry))
    return members


def _linux_group_members(pgid: int) -> bool | None:
    """Whether a live (non-zombie) process is in group ``pgid``; None without ``/proc``."""
    members = group_members(pgid)
    return None if members is None else bool(members)


def kill_group_members(pgid: int, *, spare: int) -> None:
    """SIGKILL every process of group ``pgid`` but ``spare`` (the caller: a supervisor that
    must outlive its job's processes to record how they ended). Without ``/proc`` nothing is
    found; the group dies when the job is deleted."""
    for pid in group_members(pgid) or []:
        if pid != spare:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def wait_children(pids: Collection[int], timeout: float) -> tuple[int, int] | None:
    """Wait for one of this process's children ``pids`` to exit: ``(pid, wait status)``, or
    None if none has after ``timeout`` seconds. Wakes at the exit through pidfds (Linux),
    else by polling."""
    deadline = time.monotonic() + timeout
    fds: list[int] = []
    try:
        with contextlib.suppress(AttributeError, OSError):  # no pidfd_open: poll instead
            for pid in pids:
                fds.append(os.pidfd_open(pid))
        while True:
            for pid in pids:
                done, status = os.waitpid(pid, os.WNOHANG)
                if done:
                    return done, status
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            if len(fds) == len(pids):
                select.select(fds, [], [], remaining)
            else:
                time.sleep(min(remaining, 0.05))
    finally:
        for fd in fds:
            os.close(fd)


def group_alive(pgid: int) -> bool:
    """Whether any process of group ``pgid`` still runs; zombies waiting to be reaped by
    someone else count as gone."""
    _reap(pgid)
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    members = _linux_group_members(pgid)
    return True if members is None else members


def await_group_gone(pgid: int, timeout: float, *, poll_interval: float) -> bool:
    """Wait up to ``timeout`` until no process of group ``pgid`` runs (a zombie has ended);
    whether none does. Polls, first often, then every ``poll_interval``: a group's members are
    not this process's children, so there is nothing to wait on."""
    deadline = time.monotonic() + timeout
    delay = 0.005
    while group_alive(pgid):
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return False
        time.sleep(min(delay, poll_interval, remaining))
        delay *= 2
    return True


def terminate_group(pgid: int, *, grace: float, timeout: float, poll_interval: float) -> bool:
    """SIGTERM the group, SIGKILL it after ``grace``; True once no member is left."""
    deadline = time.monotonic() + timeout
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, signal.SIGTERM)
    if await_group_gone(pgid, min(grace, timeout), poll_interval=poll_interval):
        return True
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, signal.SIGKILL)
    remaining = max(0.0, deadline - time.monotonic())
    return await_group_gone(pgid, remaining, poll_interval=poll_interval)
