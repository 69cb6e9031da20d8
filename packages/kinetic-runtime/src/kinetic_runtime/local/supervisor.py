"""The detached process that owns one local job: wait for a slot, run the runtime, record the exit.

Run as ``python -m kinetic_runtime.local.supervisor JOB_DIR`` in its own session, so it outlives
the submitting process and ``os.killpg`` on its pid stops the whole tree. Standard library only
(the client's ``kinetic`` package is never loaded), so it starts fast. The job directory it
manages::

    launch.json   what to run (written by the client)
    supervisor.pid   the supervisor's pid (written by the client once it started it: until
                  then the submission may still fail, so the supervisor waits for it)
    state.json    phase, pids, exit code (written atomically)
    output.log    the job's stdout and stderr
    cancelled     marker: the job is being deleted, do not start it
    work/         the unpacked bundle and the job's working directory
"""

import fcntl
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, BinaryIO

from kinetic_runtime.local.processes import die_with_parent

__all__ = ["StartRuntime", "read_state", "runtime_env", "supervise", "write_state"]

STATE_FILE = "state.json"
LAUNCH_FILE = "launch.json"
LOG_FILE = "output.log"
CANCEL_MARKER = "cancelled"
PID_FILE = "supervisor.pid"
CONFIRM_SECONDS = 60.0
"""How long a supervisor waits for the client to record it before giving the job up."""

StartRuntime = Callable[[dict[str, Any], Path, BinaryIO, int], int]
"""``(launch, job_dir, log, slot_fd) -> pid``: start the runtime, which must hold ``slot_fd``
open (so the slot stays taken while it runs) and die with the supervisor."""


def write_state(job_dir: Path, **state: Any) -> None:
    """Replace ``state.json`` atomically, so readers never see half a file."""
    state["updated_at"] = time.time()
    tmp = job_dir / f".{STATE_FILE}.{os.getpid()}"
    tmp.write_text(json.dumps(state))
    os.replace(tmp, job_dir / STATE_FILE)


def read_state(job_dir: Path) -> dict[str, Any] | None:
    try:
        loaded: dict[str, Any] = json.loads((job_dir / STATE_FILE).read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return None
    return loaded


def _acquire_slot(slots_dir: Path, slots: int, job_dir: Path) -> int | None:
    """Hold one of ``slots`` lock files; None if the job was cancelled while waiting.

    Waiting jobs queue on one blocking lock, so only the head of the queue polls the slots
    (briefly); the kernel wakes the next waiter when the head gets its slot.
    """
    slots_dir.mkdir(parents=True, exist_ok=True)
    queue = os.open(slots_dir / "queue.lock", os.O_CREAT | os.O_RDWR, 0o644)
    handles = [
        os.open(slots_dir / f"{i}.lock", os.O_CREAT | os.O_RDWR, 0o644) for i in range(slots)
    ]
    acquired: int | None = None
    try:
        fcntl.flock(queue, fcntl.LOCK_EX)
        delay = 0.001
        while acquired is None and not (job_dir / CANCEL_MARKER).exists():
            for fd in handles:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    continue
                acquired = fd
                break
            else:
                time.sleep(delay)
                delay = min(delay * 2, 0.01)
    finally:
        os.close(queue)
        for fd in handles:
            if fd != acquired:
                os.close(fd)
    return acquired


def _describe_exit(code: int) -> str:
    if code >= 0:
        return "" if code == 0 else f"exit {code}"
    name = signal.Signals(-code).name
    hint = " (out of memory?)" if -code == signal.SIGKILL else ""
    return f"killed by {name}{hint}"


def runtime_env(launch: dict[str, Any]) -> dict[str, str]:
    """The job's environment: the submitter's, plus what the runtime needs."""
    return {**launch.get("env", os.environ), "PYTHONUNBUFFERED": "1", "KINETIC_ENV": "local"}


def _exec_runtime(launch: dict[str, Any], job_dir: Path, log: BinaryIO, slot: int) -> int:
    """Start ``python -m kinetic_runtime`` for the job; return its pid."""
    supervisor = os.getpid()
    command = [
        launch["python"], "-m", "kinetic_runtime",
        "--store", launch["store_uri"], "--job", launch["job_id"],
        "--workdir", str(job_dir / "work"),
    ]  # fmt: skip
    child = subprocess.Popen(
        command, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
        env=runtime_env(launch), cwd=job_dir, pass_fds=(slot,),
        preexec_fn=lambda: die_with_parent(supervisor),  # noqa: PLW1509 (one thread)
    )  # fmt: skip
    return child.pid


def _claim(job_dir: Path) -> bool:
    """Only one supervisor may ever run a job, however it was started."""
    try:
        os.close(os.open(job_dir / "claimed", os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
    except FileExistsError:
        return False
    return True


def _confirmed(job_dir: Path) -> bool:
    """Wait until the client has recorded this supervisor in ``supervisor.pid``.

    Until then the submission may still fail (a full disk), and a failed submission must not
    have run anything. False if the job was withdrawn or never confirmed.
    """
    deadline = time.monotonic() + CONFIRM_SECONDS
    delay = 0.0005
    while not (job_dir / CANCEL_MARKER).exists():
        try:
            if (job_dir / PID_FILE).read_text() == str(os.getpid()):
                return True
        except FileNotFoundError:
            if not job_dir.is_dir():
                return False
        if time.monotonic() > deadline:
            write_state(
                job_dir,
                phase="FAILED",
                supervisor_pid=os.getpid(),
                detail="its submission never completed, so it did not run",
            )
            return False
        time.sleep(delay)
        delay = min(delay * 2, 0.01)
    return False


def supervise(job_dir: Path, start: StartRuntime = _exec_runtime) -> int:
    """Run the job in ``job_dir`` to the end and record how it ended.

    ``start`` launches the runtime process and returns its pid: a fresh interpreter by
    default, or a fork of a process that has already imported the runtime (the launcher).
    """
    if not _claim(job_dir) or not _confirmed(job_dir):
        return 0
    launch = json.loads((job_dir / LAUNCH_FILE).read_text())
    write_state(job_dir, phase="PENDING", supervisor_pid=os.getpid())
    slot = _acquire_slot(Path(launch["slots_dir"]), int(launch["slots"]), job_dir)
    if slot is None or (job_dir / CANCEL_MARKER).exists():
        return 0
    with open(job_dir / LOG_FILE, "ab", buffering=0) as log:
        pid = start(launch, job_dir, log, slot)
        write_state(
            job_dir, phase="RUNNING", supervisor_pid=os.getpid(), pid=pid, started_at=time.time()
        )
        _, status = os.waitpid(pid, 0)
    code = os.waitstatus_to_exitcode(status)
    write_state(
        job_dir,
        phase="SUCCEEDED" if code == 0 else "FAILED",
        supervisor_pid=os.getpid(),
        exit_code=code,
        detail=_describe_exit(code),
        finished_at=time.time(),
    )
    os.close(slot)
    return 0


if __name__ == "__main__":
    sys.exit(supervise(Path(sys.argv[1])))
