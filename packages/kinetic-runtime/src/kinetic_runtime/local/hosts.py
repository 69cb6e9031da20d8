"""A local job's runtimes: one per host (one for most jobs; ``nodes * slices *
hosts-per-slice`` for a group), started together, each told its place in the group, and ended
together, as a slice's are, when one fails or the job's timeout passes.
:mod:`kinetic_runtime.local.supervisor` runs them and records how they ended.
"""

import contextlib
import os
import signal
import socket
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, BinaryIO

from kinetic_runtime.local.gpus import HostDevices, host_devices, visible_gpus
from kinetic_runtime.local.processes import kill_group_members, wait_children
from kinetic_runtime.private_files import open_private

__all__ = ["LOG_FILE", "Ended", "StartRuntime", "log_name", "open_log", "run_hosts"]

LOG_FILE = "output.log"
STOP_GRACE_SECONDS = 2.0
"""How long the other hosts of a failed job get to exit after SIGTERM, before SIGKILL."""

StartRuntime = Callable[[dict[str, Any], Path, BinaryIO, int], int]
"""``(launch, job_dir, log, slot_fd) -> pid``: start the runtime, which must hold ``slot_fd``
open (so the slot stays taken while it runs) and die with the supervisor."""


def log_name(host: int) -> str:
    """Host 0 keeps ``output.log``, so readers of a single-host job's log read the leader's."""
    return LOG_FILE if host == 0 else f"output-host{host}.log"


def _describe_exit(code: int) -> str:
    if code >= 0:
        return "" if code == 0 else f"exit {code}"
    name = signal.Signals(-code).name
    hint = " (out of memory?)" if -code == signal.SIGKILL else ""
    return f"killed by {name}{hint}"


def _free_ports(count: int) -> list[int]:
    """``count`` distinct ports for host 0's servers (JAX's coordinator, PyTorch's rendezvous,
    multislice's); the hosts start right away, so they stay free."""
    with contextlib.ExitStack() as held:
        probes = [held.enter_context(socket.socket()) for _ in range(count)]
        for probe in probes:
            probe.bind(("127.0.0.1", 0))
        return [int(probe.getsockname()[1]) for probe in probes]


def _group_env(launch: dict[str, Any]) -> dict[str, str]:
    """What every host of the job shares (``kinetic_runtime.host_place``): the group's size,
    and host 0's ports on this machine, where all hosts share one network."""
    coordinator, torch, megascale = _free_ports(3)
    return {
        "KINETIC_NUM_HOSTS": str(launch["hosts"]),
        "KINETIC_NUM_SLICES": str(launch.get("slices", 1)),
        "KINETIC_COORDINATOR_ADDRESS": f"127.0.0.1:{coordinator}",
        "KINETIC_TORCH_PORT": str(torch),
        "KINETIC_MEGASCALE_PORT": str(megascale),
    }


def _host_launch(
    launch: dict[str, Any], host: int, group: dict[str, str], devices: HostDevices
) -> dict[str, Any]:
    """``launch`` for one host: the variables ``SliceHost.from_env`` reads, its share of this
    machine's GPUs, and its workdir."""
    env = {
        **launch.get("env", {}),
        **devices.env,
        **group,
        "KINETIC_HOST_INDEX": str(host),
        "KINETIC_HOST_INSTANCE": f"{launch['job_id']}-host{host}-{os.getpid()}",
    }
    return {**launch, "env": env, "host": host}


def _stop_hosts(running: dict[int, int]) -> None:
    """SIGTERM every host in ``running`` (pid -> host), SIGKILL those left after the grace,
    and reap them all, so none outlives the job's final state."""
    for pid in running:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + STOP_GRACE_SECONDS
    while running and time.monotonic() < deadline:
        for pid in list(running):
            if os.waitpid(pid, os.WNOHANG)[0]:
                del running[pid]
        time.sleep(0.01)
    for pid in running:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    running.clear()


class Ended:
    """How a job's runtimes ended: the exit code (the failed host's, else 0), the state's
    detail, whether they were stopped past the job's timeout, and a cause to record."""

    def __init__(
        self, code: int | None, detail: str, timed_out: bool = False, cause: str | None = None
    ) -> None:
        self.code, self.detail, self.timed_out, self.cause = code, detail, timed_out, cause


def _next_exit(running: dict[int, int], deadline: float | None) -> tuple[int, int] | None:
    """The next host to exit, as ``(pid, wait status)``; None once ``deadline`` has passed."""
    if deadline is None:
        return os.wait()  # the hosts are the supervisor's only children
    return wait_children(list(running), deadline - time.monotonic())


def _stop_past_timeout(running: dict[int, int], timeout: float) -> Ended:
    """Stop every host and whatever they started; the supervisor alone stays, to record it."""
    _stop_hosts(running)
    kill_group_members(os.getpgrp(), spare=os.getpid())
    return Ended(None, f"ran past its timeout of {timeout:g}s and was stopped", timed_out=True)


def _wait_hosts(running: dict[int, int], count: int, timeout: float | None) -> Ended:
    """Wait for every host; at the first that fails, stop the rest and say which failed."""
    deadline = None if timeout is None else time.monotonic() + timeout
    while running:
        ended = _next_exit(running, deadline)
        if ended is None:
            assert timeout is not None
            return _stop_past_timeout(running, timeout)
        pid, status = ended
        host = running.pop(pid, None)
        if host is None:
            continue
        code = os.waitstatus_to_exitcode(status)
        if code != 0:
            _stop_hosts(running)
            where = f"host {host} of {count}: " if count > 1 else ""
            return Ended(code, f"{where}{_describe_exit(code)}")
    return Ended(0, "")


def run_hosts(
    launch: dict[str, Any],
    job_dir: Path,
    slot: int,
    start: StartRuntime,
    started: Callable[[list[int]], None],
) -> tuple[Ended, list[int]]:
    """Run the job's ``launch["hosts"]`` runtimes (one host without a coordinator); ``started``
    gets their pids, in host order. Returns how they ended, and the pids."""
    count = int(launch.get("hosts", 1))
    group = _group_env(launch) if count > 1 else {}
    gpus = visible_gpus(launch.get("env", {})) if count > 1 else []
    running: dict[int, int] = {}
    with contextlib.ExitStack() as logs:
        try:
            for host in range(count):
                log = logs.enter_context(open_log(job_dir / log_name(host)))
                host_launch = launch
                if count > 1:
                    devices = host_devices(gpus, count, host, launch.get("env", {}))
                    if devices.notice:
                        log.write(f"[kinetic] job {launch['job_id']}: {devices.notice}\n".encode())
                    host_launch = _host_launch(launch, host, group, devices)
                pid = start(host_launch, job_dir, log, slot)
                running[pid] = host
        except BaseException:
            _stop_hosts(running)
            raise
    pids = list(running)
    started(pids)
    timeout = launch.get("timeout")
    return _wait_hosts(running, count, None if timeout is None else float(timeout)), pids


def open_log(path: Path) -> BinaryIO:
    return os.fdopen(open_private(path, os.O_WRONLY | os.O_APPEND), "ab", buffering=0)
