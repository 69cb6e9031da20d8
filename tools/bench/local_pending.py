"""A local batch far larger than the machine: how many processes and how much memory it holds.

Submits N inputs with ``run_async_map(..., max_concurrent=None)`` on the local backend and
samples ``/proc`` meanwhile for every process of this Kinetic home: this client and its
children, and whatever was started with this ``KINETIC_HOME`` (launcher, line keeper,
supervisors, runtimes) or works in a directory under it. The RSS figure is the sum over those
processes (pages they share are counted once per process, so it is an upper bound); the peak
RSS of the client, the launcher and the line's keeper is given for each on its own too.
"""

import contextlib
import os
import signal
import threading
import time
from pathlib import Path
from typing import Any

_PAGE = os.sysconf("SC_PAGE_SIZE")


def _parent(pid: str) -> int | None:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return None


def _of_home(pid: str, home: bytes, client: int, parents: dict[int, int | None]) -> bool:
    try:
        if f"KINETIC_HOME={home.decode()}".encode() in Path(f"/proc/{pid}/environ").read_bytes():
            return True
        if os.readlink(f"/proc/{pid}/cwd").encode().startswith(home):
            return True
    except OSError:
        return False
    ancestor = parents.get(int(pid))
    while ancestor not in (None, 0, 1):
        if ancestor == client:
            return True
        ancestor = parents.get(ancestor)
    return False


def processes_of(home: Path) -> list[int]:
    """The live processes of this client and of the Kinetic home ``home``."""
    pids = [entry for entry in os.listdir("/proc") if entry.isdigit()]
    parents = {int(pid): _parent(pid) for pid in pids}
    client = os.getpid()
    return [
        int(pid)
        for pid in pids
        if int(pid) == client or _of_home(pid, str(home).encode(), client, parents)
    ]


def _rss(pid: int) -> int:
    try:
        return int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * _PAGE
    except (OSError, IndexError, ValueError):
        return 0


_ROLES = {
    b"kinetic_runtime.local.launcher": "launcher",
    b"kinetic_runtime.local.line_keeper": "keeper",
}


def _role(pid: int) -> str | None:
    """``client``, ``launcher`` or ``keeper``; None for a job's processes."""
    if pid == os.getpid():
        return "client"
    try:
        words = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return None
    return next((_ROLES[word] for word in words[:3] if word in _ROLES), None)


class Peaks(threading.Thread):
    """The most processes, the largest RSS sum, and the largest RSS of the client, the
    launcher and the keeper, seen until stopped."""

    def __init__(self, home: Path, every: float = 0.25) -> None:
        super().__init__(name="bench-peaks", daemon=True)
        self.home, self.every, self.stopped = home, every, threading.Event()
        self.processes, self.rss, self.samples = 0, 0, 0
        self.by_role: dict[str, int] = {}

    def run(self) -> None:
        while not self.stopped.wait(self.every):
            pids = processes_of(self.home)
            sizes = {pid: _rss(pid) for pid in pids}
            self.processes = max(self.processes, len(pids))
            self.rss = max(self.rss, sum(sizes.values()))
            for pid, size in sizes.items():
                role = _role(pid)
                if role is not None:
                    self.by_role[role] = max(self.by_role.get(role, 0), size)
            self.samples += 1


def _kill_home(home: Path) -> None:
    """End what the batch left running (jobs still waiting or running past the window)."""
    for pid in processes_of(home):
        if pid != os.getpid():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def bench_pending(n: int, square: Any, window: float) -> dict[str, Any]:
    """Submit ``n`` inputs at once, then sample until every input has started (the line is
    empty), at most ``window`` seconds after the submission ended. The batch's own results are
    not waited for: a poll of every child costs what the whole batch costs, not the line."""
    import kinetic
    from kinetic_runtime.local.slot_queue import line_empty, waiting_jobs

    home = Path(os.environ["KINETIC_HOME"])
    slots_dir = home / "local" / "slots"
    remote = kinetic.run(accelerator="cpu", backend="local")(square)
    peaks = Peaks(home)
    peaks.start()
    start = time.perf_counter()
    try:
        batch = remote.run_async_map(range(n), max_concurrent=None)
        batch.wait_submitted()
        submitted = time.perf_counter() - start
        deadline = time.monotonic() + window
        while not line_empty(slots_dir) and time.monotonic() < deadline:
            time.sleep(0.5)
        emptied = line_empty(slots_dir)
        report: dict[str, Any] = {
            "n": n,
            "submission_s": round(submitted, 2),
            "all_started_s": round(time.perf_counter() - start, 2) if emptied else None,
            "still_waiting": len(waiting_jobs(slots_dir)),
        }
    finally:
        peaks.stopped.set()
        peaks.join()
        _kill_home(home)
    return {
        **report,
        "peak_processes": peaks.processes,
        "peak_rss_sum_mib": round(peaks.rss / 2**20, 1),
        "peak_rss_mib": {role: round(size / 2**20, 1) for role, size in peaks.by_role.items()},
        "samples": peaks.samples,
    }
