"""The detached process that owns one local job while it runs: run the runtime, record the exit.

A job waiting for a slot has no process: it is a ticket in line
(``kinetic_runtime.local.slot_queue``), by ``priority`` (the value of the job's class, in
``launch.json``), then by ``line_number`` (its place in the order of submission). A dispatcher
(``kinetic_runtime.local.dispatch``) starts its supervisor holding a free slot; the supervisor
claims the job (``kinetic_runtime.local.claim``), runs it, and once it has ended starts the
next waiting job.

Forked by its dispatcher (``kinetic_runtime.local.spawners``) into a session of its own, so it
outlives the submitting process and ``os.killpg`` on its pid stops the whole tree. Standard
library only (the client's ``kinetic`` package is never loaded), so what forks it stays small.
The job directory it manages::

    launch.json   what to run (written by the client), with the little of this machine's
                  environment a job inherits (``kinetic.local.environment``)
    captured-env.json   the captured variables' values (written by the client, when there are
                  any): read, then deleted once the job has started
    claim         room for a process identity, set aside by the client: the job was never
                  started while it is there
    supervisor.pid   the supervisor that claimed the job: its pid and start time
                  (``pid:start_ticks``, ``kinetic_runtime.local.processes.process_identity``)
    state.json    phase, pids, exit code, ``preemptions`` (runs started again), and ``cause``:
                  ``timeout`` for a job stopped past its ``timeout``, ``preempted`` for one
                  preempted past its ``preemption_retries``, ``infrastructure`` for one a full
                  disk stopped past ``disk_full_retries`` (written atomically; the last one,
                  on a full disk, into room set aside: ``state.reserve``)
    termination.log   room set aside where a runtime says what a full disk kept it from
                  writing, and where
    output.log    the job's stdout and stderr (host 0's on a multi-host job)
    output-host<i>.log   host i's, on a multi-host job
    cancelled     marker: the job is being deleted, do not start it

Every file is 0600 and every directory 0700 (``kinetic_runtime.private_files``).
    work/         the bundle's files and the job's working directory (``work-host<i>/``: host
                  i's): seen from outside the job, where it is overlaid, an empty directory
    work-overlay/ what the job wrote in ``work/`` (``upper/``), where its bundle's tree is
                  overlaid there (``kinetic_runtime.bundle_trees``)

A job with a ``timeout`` in ``launch.json`` is stopped that many seconds after its runtimes
started: they get SIGTERM, then SIGKILL after a grace, and every other process of the job's
group (what the function started) is killed; the log stays.

A runtime ended by a SIGTERM Kinetic did not send is the local analogue of a spot preemption
(a machine shutting down sends it, as a kubelet does to a pod on a reclaimed node): the
supervisor runs the job again, in the same directory with a fresh working directory, up to
``preemption_retries`` times (``launch.json``), then records ``cause: preempted``.

A full disk is no fault of the job's either: a runtime that it kept from starting the function
or from storing the result (it exits ``EXIT_NO_SPACE``), or a supervisor that could not start
it for lack of room, is run again after 1, 2, 4, ... seconds, ``disk_full_retries`` times
(``launch.json``, default 5), then ends FAILED with ``cause: infrastructure`` and a detail
saying what was written where. A batch's ``retries`` are not spent meanwhile.

A multi-host job (``hosts`` > 1 in ``launch.json``) is one job: it holds one slot and runs one
runtime per host, each told its place through ``KINETIC_NUM_HOSTS``, ``KINETIC_HOST_INDEX``,
``KINETIC_COORDINATOR_ADDRESS`` and ``KINETIC_HOST_INSTANCE``. It fails as soon as any host
fails, as a slice does: the other hosts are stopped rather than left waiting on a collective
their failed peer will never join.
"""

import contextlib
import json
import os
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, BinaryIO

from kinetic_protocol.errors import is_disk_full
from kinetic_protocol.exits import EXIT_NO_SPACE
from kinetic_runtime.bundle_trees import remove_workdir
from kinetic_runtime.disk_full import overwrite
from kinetic_runtime.local.claim import PID_FILE, claim
from kinetic_runtime.local.dispatch import CANCEL_MARKER, LAUNCH_FILE
from kinetic_runtime.local.gpus import ON_DEMAND_MEMORY, visible_gpus
from kinetic_runtime.local.hosts import Ended, StartRuntime, log_name, open_log, run_hosts
from kinetic_runtime.local.processes import die_with_parent
from kinetic_runtime.local.state_file import (
    STATE_FILE,
    read_note,
    read_state,
    write_final_state,
    write_state,
    write_state_if_room,
)

__all__ = [
    "CANCEL_MARKER",
    "LAUNCH_FILE",
    "PID_FILE",
    "STATE_FILE",
    "StartRuntime",
    "exec_runtime",
    "log_name",
    "read_state",
    "runtime_env",
    "supervise",
    "workdir",
    "write_state",
]

CAPTURED_ENV_FILE = "captured-env.json"
TERMINATION_FILE = "termination.log"
"""Room set aside for a runtime to say why it ended without running (``EXIT_NO_SPACE``)."""
DISK_FULL_RETRIES = 5
"""How often a job that a full disk stopped is run again, after 1, 2, 4, ... s, unless
``launch.json`` says otherwise; then it fails with cause ``infrastructure``, naming the disk."""
NEVER_STARTED = (
    "never started: the process submitting it stopped first; submitting the same job again "
    "(a batch's resume does) starts it"
)
PRIVATE_UMASK = 0o077
_RUNTIMES: list[subprocess.Popen[bytes]] = []
"""Kept so that ``subprocess`` never reaps a runtime behind the supervisor's own ``wait``."""


def workdir(launch: dict[str, Any], job_dir: Path) -> Path:
    """Where a runtime unpacks the bundle: each host has its own, as each pod does."""
    host = int(launch.get("host", 0))
    return job_dir / ("work" if host == 0 else f"work-host{host}")


def runtime_env(launch: dict[str, Any]) -> dict[str, str]:
    """The job's environment: what it inherits of this machine and its captured variables
    (``launch["env"]``), plus what the runtime needs. Volumes are the runtime's to mount here
    (a private mount namespace), as no platform mounts them."""
    return {
        **launch.get("env", {}),
        "PYTHONUNBUFFERED": "1",
        "KINETIC_ENV": "local",
        "KINETIC_VOLUME_MOUNTS": "namespace",
    }


def exec_runtime(launch: dict[str, Any], job_dir: Path, log: BinaryIO, slot: int) -> int:
    """Start ``python -m kinetic_runtime`` for the job; return its pid."""
    supervisor = os.getpid()
    command = [
        launch["python"],
        "-m",
        "kinetic_runtime",
        *launch["runtime_args"],
        "--workdir",
        str(workdir(launch, job_dir)),
    ]
    child = subprocess.Popen(
        command,
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=subprocess.STDOUT,
        env=runtime_env(launch),
        cwd=job_dir,
        pass_fds=(slot,),
        preexec_fn=lambda: die_with_parent(supervisor),  # noqa: PLW1509 (one thread)
    )
    _RUNTIMES.append(child)
    return child.pid


def _take_captured_env(job_dir: Path) -> dict[str, str]:
    """The captured variables' values the client left for this job (none if it left none)."""
    try:
        loaded: dict[str, str] = json.loads((job_dir / CAPTURED_ENV_FILE).read_text())
    except FileNotFoundError:
        return {}
    return loaded


def _forget_captured_env(job_dir: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        (job_dir / CAPTURED_ENV_FILE).unlink()


def supervise(
    job_dir: Path, slot: int, start: StartRuntime = exec_runtime, report: int | None = None
) -> int:
    """Run the job in ``job_dir`` on the slot whose lock ``slot`` holds, record how it ended,
    then start the next waiting job. Says on ``report`` (a pipe's write end) whether it claimed
    the job: its dispatcher keeps its ticket in line until then.

    ``start`` launches the runtime process and returns its pid: a fresh interpreter by
    default, or a fork of a process that has already imported the runtime (the launcher).
    """
    # Everything the job writes (its workdir, staged data, outputs in a local store) is
    # private, whatever the submitter's umask: the runtimes inherit this one.
    os.umask(PRIVATE_UMASK)
    # Out of every job's directory (its runtimes work in it): a forked supervisor would
    # otherwise keep its dispatcher's, that of another job, ended and perhaps deleted.
    os.chdir("/")
    # The supervisor waits for its runtimes, and each runtime's keeper for its job: with
    # SIGCHLD ignored (inherited across exec from a submitter started that way, or the
    # launcher's own) the kernel reaps them unasked and both waits fail. The runtimes
    # inherit this default.
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    claimed = claim(job_dir)
    if report is not None:
        with contextlib.suppress(OSError):
            os.write(report, b"1" if claimed else b"0")
        os.close(report)
    try:
        if claimed and not (job_dir / CANCEL_MARKER).exists():
            _run(job_dir, start, slot)
    finally:
        _forget_captured_env(job_dir)  # also when the job never started
        os.close(slot)
    _start_next(job_dir, start)
    return 0


def _start_next(job_dir: Path, start: StartRuntime) -> None:
    """The slot this job held is free: have whoever waits for it started, by the line's
    keeper (``line_keeper.wake_keeper``: a supervisor forked from this one would carry this
    one's memory, and the next one both), or here if no keeper runs."""
    from kinetic_runtime.local.dispatch import dispatch
    from kinetic_runtime.local.line_keeper import wake_keeper
    from kinetic_runtime.local.spawners import forked, runtime_start

    slots_dir = job_dir.parent.parent / "slots"
    with contextlib.suppress(OSError, ValueError):
        launch = json.loads((job_dir / LAUNCH_FILE).read_text())
        slots_dir = Path(launch["slots_dir"])
    if wake_keeper(slots_dir):
        return
    warm = None if start is exec_runtime else start
    dispatch(slots_dir, forked(runtime_start(warm)))


def _run(job_dir: Path, start: StartRuntime, slot: int) -> None:
    launch = json.loads((job_dir / LAUNCH_FILE).read_text())
    launch["env"] = {**launch.get("env", {}), **_take_captured_env(job_dir)}
    if visible_gpus(launch["env"]):  # shared with other jobs and the submitter
        launch["env"] = {**ON_DEMAND_MEMORY, **launch["env"]}
    write_state_if_room(job_dir, phase="PENDING", supervisor_pid=os.getpid())
    started_at = time.time()

    preemptions = 0

    def running(pids: list[int]) -> None:
        _forget_captured_env(job_dir)  # the runtimes have the values: no copy stays behind
        write_state_if_room(
            job_dir,
            phase="RUNNING",
            supervisor_pid=os.getpid(),
            pid=pids[0],
            pids=pids,
            started_at=started_at,
            preemptions=preemptions,
        )

    budget = int(launch.get("preemption_retries") or 0)
    room_budget, room_runs = int(launch.get("disk_full_retries", DISK_FULL_RETRIES)), 0
    while True:
        ended, pids = _run_once(launch, job_dir, slot, start, running)
        out_of_room = ended.code == EXIT_NO_SPACE and room_runs < room_budget
        if out_of_room and _wait_for_room(launch, job_dir, ended, room_runs):
            room_runs += 1
            started_at = time.time()
            continue
        preempted = _preempted(ended, job_dir)
        if not preempted or preemptions >= budget:
            break
        preemptions += 1
        _run_again(launch, job_dir, ended, preemptions, budget)
        started_at = time.time()
    cause = "timeout" if ended.timed_out else "preempted" if preempted else ended.cause
    write_final_state(
        job_dir,
        phase="SUCCEEDED" if ended.code == 0 else "FAILED",
        supervisor_pid=os.getpid(),
        pids=pids,
        exit_code=ended.code,
        detail=ended.detail,
        finished_at=time.time(),
        preemptions=preemptions,
        **({"cause": cause} if cause else {}),
    )


def _run_once(
    launch: dict[str, Any],
    job_dir: Path,
    slot: int,
    start: StartRuntime,
    started: Callable[[list[int]], None],
) -> tuple[Ended, list[int]]:
    """One run of the job's hosts. A full disk, met by the runtime (``EXIT_NO_SPACE``) or by
    starting it, is an infrastructure fault, saying what was written where."""
    overwrite(job_dir / TERMINATION_FILE)  # blank again: a run before may have written it
    try:
        ended, pids = run_hosts(launch, job_dir, slot, start, started)
    except OSError as exc:
        if is_disk_full(exc):
            detail = f"No space left on device while starting the job: {exc}"
            return Ended(EXIT_NO_SPACE, detail, cause="infrastructure"), []
        raise
    if ended.code == EXIT_NO_SPACE:
        said = read_note(job_dir / TERMINATION_FILE)
        ended.detail = said or f"No space left on device ({ended.detail}) under {job_dir}"
        ended.cause = "infrastructure"
    return ended, pids


def _wait_for_room(launch: dict[str, Any], job_dir: Path, ended: Ended, runs: int) -> bool:
    """Before running a job again that a full disk stopped: a pause (1, 2, 4, ... s), saying
    why in its log where there is room. False if it was cancelled meanwhile."""
    pause = min(2.0**runs, 30.0)
    for host in range(int(launch.get("hosts", 1))):
        remove_workdir(workdir({**launch, "host": host}, job_dir))
    with contextlib.suppress(OSError), open_log(job_dir / log_name(0)) as log:
        log.write(
            f"[kinetic] job {launch['job_id']}: {ended.detail}; running it again in "
            f"{pause:g}s (a full disk is not the job's fault)\n".encode()
        )
    write_state_if_room(job_dir, phase="PENDING", supervisor_pid=os.getpid())
    deadline = time.monotonic() + pause
    while time.monotonic() < deadline:
        if (job_dir / CANCEL_MARKER).exists():
            return False
        time.sleep(min(0.1, max(0.0, deadline - time.monotonic())))
    return not (job_dir / CANCEL_MARKER).exists()


def _preempted(ended: Ended, job_dir: Path) -> bool:
    """Locally, what a spot reclaim or a node shutdown does to a pod: a runtime ended by a
    SIGTERM that Kinetic did not send (not its timeout, not a cancel), as a shutting-down
    machine or ``kill PID`` sends it."""
    if ended.timed_out or (job_dir / CANCEL_MARKER).exists():
        return False
    return ended.code in (-signal.SIGTERM, 128 + signal.SIGTERM)


def _run_again(
    launch: dict[str, Any], job_dir: Path, ended: Ended, preemptions: int, budget: int
) -> None:
    """Start over as a new pod would: a fresh working directory (what the job keeps is in
    ``KINETIC_OUTPUT_DIR``), its log appended, saying why."""
    for host in range(int(launch.get("hosts", 1))):
        remove_workdir(workdir({**launch, "host": host}, job_dir))
    with open_log(job_dir / log_name(0)) as log:
        log.write(
            f"[kinetic] job {launch['job_id']}: preempted ({ended.detail}); running it again "
            f"({preemptions} of {budget} preemption retries)\n".encode()
        )
    write_state_if_room(
        job_dir, phase="PENDING", supervisor_pid=os.getpid(), preemptions=preemptions
    )
