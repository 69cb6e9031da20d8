"""Liveness of a local job's process group: exited members do not keep a group alive; a group
is killed as a job's only while it is still the job's supervisor's (issue 53)."""

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from kinetic_runtime.local.processes import (
    await_group_gone,
    group_alive,
    may_kill_group,
    process_identity,
    same_process_alive,
    terminate_group,
)

# A parent that is not in the group it creates: it forks a child that becomes the leader of a
# new process group and exits at once. The parent never reaps it, so the group's only member is
# a zombie for as long as the parent lives, as when a job's processes have died but the
# machine's init has not reaped them yet (slow or absent reapers are common in containers).
_ZOMBIE_MAKER = """
import os, sys, time
pid = os.fork()
if pid == 0:
    os.setsid()
    os._exit(0)
print(pid, flush=True)
sys.stdin.read()
"""


@pytest.fixture
def zombie_group() -> Iterator[int]:
    """The id of a process group whose only member has exited but is not yet reaped."""
    parent = subprocess.Popen(
        [sys.executable, "-c", _ZOMBIE_MAKER],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert parent.stdout is not None and parent.stdin is not None
    try:
        pid = int(parent.stdout.readline())
        _wait_until_zombie(pid)
        yield pid
    finally:
        parent.stdin.close()  # lets the parent exit, which reaps the zombie
        parent.wait(timeout=30)
        parent.stdout.close()


def _wait_until_zombie(pid: int, timeout: float = 30) -> None:
    stat = Path(f"/proc/{pid}/stat")
    deadline = time.monotonic() + timeout
    while stat.read_text().rsplit(")", 1)[1].split()[0] != "Z":
        assert time.monotonic() < deadline, f"process {pid} did not exit"
        time.sleep(0.001)


@pytest.fixture
def live_group() -> Iterator[int]:
    """A process group whose only member waits until killed: its leader's pid."""
    leader = subprocess.Popen(
        [sys.executable, "-c", "import sys; sys.stdin.read()"],
        stdin=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        yield leader.pid
    finally:
        if leader.poll() is None:
            os.killpg(leader.pid, signal.SIGKILL)
        leader.wait(timeout=30)
        assert leader.stdin is not None
        leader.stdin.close()


def test_a_group_of_live_processes_is_alive_until_terminated(live_group: int) -> None:
    assert group_alive(live_group)
    assert terminate_group(live_group, grace=5, timeout=30, poll_interval=0.01)
    assert not group_alive(live_group)


def test_awaiting_a_group_lasts_until_it_is_gone_and_no_longer(live_group: int) -> None:
    assert not await_group_gone(live_group, 0.1, poll_interval=0.01)
    os.killpg(live_group, signal.SIGKILL)
    assert await_group_gone(live_group, 30, poll_interval=0.01)


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs procfs to see zombies")
def test_a_group_whose_members_have_all_exited_is_not_alive(zombie_group: int) -> None:
    assert not group_alive(zombie_group)
    assert terminate_group(zombie_group, grace=0.05, timeout=0.5, poll_interval=0.01)


# A job whose supervisor died and left processes behind: the leader of a new session says who
# it is, forks a member that stays in its group, and exits.
_LEADER_LEAVING_A_MEMBER = """
import os, sys
from kinetic_runtime.local.processes import process_identity
print(process_identity(os.getpid()), flush=True)
if os.fork() == 0:
    sys.stdin.read()
os._exit(0)
"""


@pytest.fixture
def leaderless_group() -> Iterator[str]:
    """The identity of a process group leader that has exited (and been reaped), its group
    still holding a live member."""
    leader = subprocess.Popen(
        [sys.executable, "-c", _LEADER_LEAVING_A_MEMBER],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    assert leader.stdin is not None and leader.stdout is not None
    identity = leader.stdout.readline().strip()
    leader.wait(timeout=30)
    try:
        yield identity
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(leader.pid, signal.SIGKILL)
        leader.stdin.close()
        leader.stdout.close()


def _start_ticks(pid: int) -> int:
    return int(process_identity(pid).split(":")[1])


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="start times come from procfs")
def test_a_pid_reused_by_a_stranger_is_neither_the_process_nor_its_group(live_group: int) -> None:
    """The recorded process started earlier than the one holding its pid now: the stranger's
    group, which the job's was not (Linux reuses no pid that is a group's id), is left alone."""
    recorded = f"{live_group}:{_start_ticks(live_group) - 1}"
    assert not same_process_alive(recorded)
    assert not may_kill_group(recorded)


@pytest.mark.parametrize("recorded", ["identity", "bare pid"])
def test_the_group_of_the_same_live_process_may_be_killed(live_group: int, recorded: str) -> None:
    """A bare pid (an older job directory's) is taken for whichever process holds it."""
    identity = process_identity(live_group) if recorded == "identity" else str(live_group)
    assert same_process_alive(identity)
    assert may_kill_group(identity)


def test_what_is_left_of_a_group_whose_leader_is_gone_may_be_killed(
    leaderless_group: str,
) -> None:
    pid = int(leaderless_group.partition(":")[0])
    assert not same_process_alive(leaderless_group)
    assert may_kill_group(leaderless_group)
    assert terminate_group(pid, grace=5, timeout=30, poll_interval=0.01)
    assert not may_kill_group(leaderless_group)


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs procfs to see zombies")
def test_a_group_of_none_but_zombies_is_not_killed(zombie_group: int) -> None:
    assert not may_kill_group(process_identity(zombie_group))
