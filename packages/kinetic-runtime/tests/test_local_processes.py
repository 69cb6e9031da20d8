"""Liveness of a local job's process group: exited members do not keep a group alive."""

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from kinetic_runtime.local.processes import await_group_gone, group_alive, terminate_group

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
