"""The embedded default backend: each job is a detached supervisor process on this machine.

It runs the same ``kinetic_runtime`` entrypoint, from the same stored bundle, as a pod would;
the job's processes (``kinetic_runtime.local``) never load this client package.
The "backend resource" of a job is its directory under ``$KINETIC_HOME/local/jobs``: deleting
it is what ``cancel``/``cleanup(k8s=True)`` do, after which the job is NOT_FOUND.
A multi-host accelerator's hosts, and the hosts of ``nodes``/``slices``, run as that many local
runtime processes of one job, each with its own log (see ``kinetic_runtime.local.supervisor``).
"""

import contextlib
import errno
import functools
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

from kinetic.config import kinetic_home
from kinetic.local import settings
from kinetic.local.environment import host_environment, runtime_path
from kinetic.local.host_logs import HostLog
from kinetic.local.job_states import abandoned, job_state
from kinetic.local.line import ensure_keeper, start_waiting
from kinetic.local.queueing import SlotLine, check_priority, prepared_queue, priority_value
from kinetic.local.volumes import check_volumes
from kinetic_protocol import (
    NO_ENV,
    BackendError,
    BackendSettings,
    Capabilities,
    DiskFullError,
    HostSelection,
    JobRecord,
    JobState,
    JobStatus,
    Keyring,
    Preparation,
    PrepareRequest,
    layout,
    parse_accelerator,
    runtime_args,
)
from kinetic_protocol.errors import is_disk_full
from kinetic_protocol.host_groups import job_hosts, selected_hosts
from kinetic_runtime.disk_full import set_aside
from kinetic_runtime.keydir import directory_keyring, replace_directory_keyring
from kinetic_runtime.local import supervisor
from kinetic_runtime.local.claim import read_claimant, set_claim_aside, withdraw
from kinetic_runtime.local.processes import (
    may_kill_group,
    pid_alive,
    process_identity,
    terminate_group,
)
from kinetic_runtime.local.slot_queue import (
    in_line,
    join_line,
    leave_line,
    take_number,
    ticket_of,
)
from kinetic_runtime.local.state_file import set_room_aside
from kinetic_runtime.private_files import DIR_MODE, make_private_dirs, write_private
from kinetic_runtime.settings import BUNDLE_CACHE, SIGNING_KEYS, TERMINATION_LOG
from kinetic_runtime.stores import default_local_store_uri

__all__ = ["LocalBackend"]

_TERMINATE_GRACE = 3.0
_STAGING_MARK = ".incoming-"
_DELETING_MARK = ".deleting-"
"""Job directories being written, or being deleted; never listed as jobs."""
PYTHON_KEY = "python"
"""``backend_data`` key: the interpreter a job runs in (an isolated venv), else the client's."""


def _staging_prefix(job_id: str) -> str:
    """A job directory is written under ``.incoming-<job>-<pid>-<random>``: the pid tells a
    later cleanup whether the process writing it is gone (killed before its rename)."""
    return f"{_STAGING_MARK}{job_id}-{os.getpid()}-"


def _writer_gone(staging_name: str) -> bool:
    """Whether the process that made this staging directory no longer exists."""
    parts = staging_name.rsplit("-", 2)
    pid = layout.ascii_count(parts[1]) if len(parts) == 3 else None
    return pid is not None and not pid_alive(pid)


def _unwritable(job_id: str, job_dir: Path, exc: OSError) -> BackendError:
    """The error for a job whose files could not be written: nothing of it runs."""
    reason = os.strerror(exc.errno) if exc.errno else str(exc)
    where = f" ({exc.filename})" if exc.filename else ""
    said = f"Job {job_id} was not submitted: writing its files under {job_dir} failed"
    if is_disk_full(exc):
        return DiskFullError(
            f"{said} ({reason}{where}); nothing was started. The disk is full: free some "
            "space or point KINETIC_HOME at a disk with room, then submit it again (a batch: "
            "kinetic batch resume)."
        )
    return BackendError(f"{said} ({reason}{where}); nothing was started.")


def _not_started(job_id: str, job_dir: Path, exc: OSError) -> BackendError:
    """The error for a job nothing could be started to run: nothing of it runs."""
    if is_disk_full(exc):
        return _unwritable(job_id, job_dir, exc)
    return BackendError(
        f"Job {job_id} was not submitted: the line's keeper, which starts it, could not be "
        f"started ({exc}); nothing was started."
    )


def _ended(job_dir: Path) -> bool:
    """Whether the job's supervisor recorded its end: it has stopped every process of the job
    then, so there is nothing to kill. It may still be running, handing its slot to the next
    waiting job (killed there, that job would wait for the line's keeper); and where there is
    no ``/proc`` its identity has no start time, so a process that reused its pid could not be
    told from it."""
    state = supervisor.read_state(job_dir) or {}
    return JobStatus(state.get("phase", "PENDING")).is_terminal


def _record_hosts(record: JobRecord) -> int:
    return job_hosts(parse_accelerator(record.accelerator), record.nodes, record.slices)


class LocalBackend:
    """Runs jobs as detached local processes, at most ``local_slots()`` at a time (those
    waiting start by priority, then in the order they were submitted)."""

    name = "local"
    declared_settings = settings.SETTINGS
    capabilities = Capabilities(
        local_data=True,
        volumes=True,
        multi_host=True,
        host_groups=True,
        capacity_choices=True,
        per_host_logs=True,
        provisions_accelerators=False,
    )
    poll_bounds = (0.005, 0.05)  # a poll is one small file read per job

    def __init__(self, settings: BackendSettings, *, python: str | None = None) -> None:
        self._settings = settings
        self._python = python or sys.executable

    # Read from the environment on each use: a backend is cached per process, KINETIC_HOME not.
    @property
    def store_uri(self) -> str:
        return self._settings.store_uri or default_local_store_uri()

    @property
    def _root(self) -> Path:
        return kinetic_home() / "local"

    @property
    def _jobs(self) -> Path:
        return self._root / "jobs"

    def job_dir(self, job_id: str) -> Path:
        return self._jobs / job_id

    @property
    def _keys(self) -> Path:
        return kinetic_home() / "keys"

    def signing_keys(self, *, create: bool, refresh: bool = False) -> Keyring:
        """The user's own keyring in the Kinetic home, which local jobs read in place."""
        return directory_keyring(self._keys, create=create)

    def replace_signing_keys(self, keyring: Keyring) -> None:
        replace_directory_keyring(self._keys, keyring)

    def prepare(self, request: PrepareRequest) -> Preparation:
        """With ``isolate=True``, run in a cached venv of the project's requirements; with
        volumes, check that jobs can have them (a private mount namespace) here; a priority
        class must be one of the defaults (``kinetic.local.queueing``)."""
        check_priority(request)
        python = self._python
        data: dict[str, str] = {}
        if request.isolate:
            from kinetic.local.isolation import ensure_isolated_env

            python = str(
                ensure_isolated_env(request.project_root, cache_root=kinetic_home() / "envs")
            )
            data[PYTHON_KEY] = python
        if request.volumes:
            check_volumes(request.volumes, python, self.store_uri)
        return Preparation(backend_data=data, queue=prepared_queue(request))

    def submit(self, record: JobRecord, *, env: Mapping[str, str] = NO_ENV) -> None:
        """Publish the job directory whole, then put the job in line; raising means nothing
        runs. The captured ``env`` goes in a private file of the job directory, which the
        supervisor deletes once the job has started (never in ``launch.json`` or the store).

        The directory is made under a temporary name and renamed into place, so a submitter
        killed halfway leaves no job that looks submitted; one killed between the rename and
        its ticket leaves a job that :meth:`statuses` reports as never started (and that a new
        submission of the same id replaces). A waiting job holds no process: whoever frees a
        slot starts it (``kinetic_runtime.local.dispatch``).
        """
        job_dir = self.job_dir(record.job_id)
        if job_dir.exists():
            if not abandoned(job_dir):
                return  # submitted before: idempotent
            self._remove(job_dir)
        try:
            launch = self._publish(record, job_dir, env)
            if launch is None:
                return  # another submitter of the same id got there first
            join_line(self._slots, ticket_of(launch))
        except OSError as exc:
            self._remove(job_dir)
            raise _unwritable(record.job_id, job_dir, exc) from exc
        try:
            start_waiting(self._slots, record.backend_data.get(PYTHON_KEY) or self._python)
            if in_line(self._slots, ticket_of(launch)):
                ensure_keeper(self._slots)
        except OSError as exc:
            leave_line(self._slots, ticket_of(launch))
            if withdraw(job_dir):  # else a supervisor has it: it runs
                self._remove(job_dir)
                raise _not_started(record.job_id, job_dir, exc) from exc

    @property
    def _slots(self) -> Path:
        return self._root / "slots"

    def _publish(
        self, record: JobRecord, job_dir: Path, env: Mapping[str, str]
    ) -> dict[str, object] | None:
        """Write the job's directory (0700, its files 0600) under a temporary name and
        rename it into place; its ``launch.json``, or None if the job existed. The room its
        supervisor needs on a full disk is set aside now, while there is some."""
        python = record.backend_data.get(PYTHON_KEY) or self._python
        inherited = {
            **host_environment(os.environ),
            SIGNING_KEYS.env: str(self._keys),
            BUNDLE_CACHE.env: str(self._root / "bundles"),
            TERMINATION_LOG.env: str(job_dir / supervisor.TERMINATION_FILE),
        }
        found_through = runtime_path(os.environ) if python == sys.executable else None
        if found_through:
            inherited["PYTHONPATH"] = found_through
        launch = {
            "job_id": record.job_id,
            "runtime_args": runtime_args(record),
            "python": python,
            "slots_dir": str(self._slots),
            "slots": settings.local_slots(),
            "hosts": _record_hosts(record),
            "slices": record.slices,
            "timeout": record.timeout,
            "preemption_retries": record.preemption_retries,
            "disk_full_retries": settings.disk_full_retries(),
            "priority": priority_value(record.priority),
            "line_number": take_number(self._slots),
            "submitter": process_identity(os.getpid()),
            "env": inherited,
        }
        make_private_dirs(self._jobs, top=kinetic_home())
        staging = Path(tempfile.mkdtemp(prefix=_staging_prefix(record.job_id), dir=self._jobs))
        try:
            os.chmod(staging, DIR_MODE)
            write_private(staging / supervisor.LAUNCH_FILE, json.dumps(launch).encode())
            if env:
                write_private(
                    staging / supervisor.CAPTURED_ENV_FILE, json.dumps(dict(env)).encode()
                )
            supervisor.write_state(staging, phase="PENDING")
            set_claim_aside(staging)
            set_room_aside(staging)
            set_aside(staging / supervisor.TERMINATION_FILE)
            os.rename(staging, job_dir)
        except OSError as exc:
            shutil.rmtree(staging, ignore_errors=True)
            if exc.errno in (errno.EEXIST, errno.ENOTEMPTY):
                return None
            raise
        return launch

    def _state(self, job_id: str, store_uri: str | None = None) -> JobState:
        keys = functools.partial(self.signing_keys, create=False)
        return job_state(self.job_dir(job_id), store_uri, keys)

    def statuses(self, records: Sequence[JobRecord]) -> dict[str, JobState]:
        """Each job's state; when some wait in line, whoever should start them is made sure
        of (a free slot is used now, and the line has a keeper). The line is read once, at
        the first job found waiting; a job in it is not looked at any further."""
        line = SlotLine(self._slots)
        states: dict[str, JobState] = {}
        for record in records:
            state = line.waiting(record)
            if state is None:
                state = line.placed(record, self._state(record.job_id, record.store_uri))
            states[record.job_id] = state
        if any(state.queue is not None for state in states.values()):
            with contextlib.suppress(OSError):
                start_waiting(self._slots, self._python)
                ensure_keeper(self._slots)
        return states

    def _host_count(self, record: JobRecord) -> int:
        """How many hosts the job was started with; its accelerator's before it was."""
        try:
            launch = json.loads((self.job_dir(record.job_id) / supervisor.LAUNCH_FILE).read_text())
            return int(launch.get("hosts", 1))
        except (OSError, ValueError):
            return _record_hosts(record)

    def _selected_logs(self, record: JobRecord, host: HostSelection) -> list[HostLog]:
        count = self._host_count(record)
        failed = None
        if host is None and count > 1:  # the leader, or the host whose failure ended the job
            failed = self._state(record.job_id, record.store_uri).failed_host
        hosts = selected_hosts(record.job_id, count, host, default=failed or 0)
        job_dir = self.job_dir(record.job_id)
        prefix = "[host {}] " if host == "all" else ""
        return [HostLog(job_dir / supervisor.log_name(i), prefix.format(i)) for i in hosts]

    def logs(
        self, record: JobRecord, *, tail: int | None = None, host: HostSelection = None
    ) -> str:
        """The selected host's output; with ``"all"``, every host's in host order (``tail``
        lines of each)."""
        return "".join(log.read(tail) for log in self._selected_logs(record, host))

    def follow_logs(self, record: JobRecord, *, host: HostSelection = None) -> Iterator[str]:
        """Lines as they are written; a bad ``host`` raises here, not at the first line."""
        return self._follow(record, self._selected_logs(record, host))

    def _follow(self, record: JobRecord, logs: list[HostLog]) -> Iterator[str]:
        delay = self.poll_bounds[0]
        try:
            while True:
                lines = [line for log in logs if (line := log.next_line())]
                if lines:
                    delay = self.poll_bounds[0]
                    yield from lines
                    continue
                if self._state(record.job_id, record.store_uri).status.is_terminal:
                    for log in logs:
                        yield from log.rest()
                    return
                time.sleep(delay)
                delay = min(delay * 2, self.poll_bounds[1])
        finally:
            for log in logs:
                log.close()

    def delete(self, record: JobRecord, *, timeout: float, poll_interval: float) -> None:
        job_dir = self.job_dir(record.job_id)
        if not job_dir.exists():
            return
        (job_dir / supervisor.CANCEL_MARKER).touch()
        with contextlib.suppress(OSError, ValueError, KeyError):
            launch = json.loads((job_dir / supervisor.LAUNCH_FILE).read_text())
            leave_line(self._slots, ticket_of(launch))  # a waiting job: nothing else to stop
        claimant = read_claimant(job_dir)
        if claimant is not None and not _ended(job_dir) and may_kill_group(claimant.identity):
            pid = claimant.pid
            stopped = terminate_group(
                pid, grace=_TERMINATE_GRACE, timeout=timeout, poll_interval=poll_interval
            )
            if not stopped:
                raise BackendError(
                    f"Job {record.job_id}: its processes (group {pid}) were still alive "
                    f"{timeout:g}s after SIGKILL. Kill them by hand: kill -9 -{pid}"
                )
        self._remove(job_dir)
        if job_dir.exists():
            raise BackendError(f"Job {record.job_id}: could not remove {job_dir}.")

    def _remove(self, job_dir: Path) -> None:
        """Take the directory away in one step (a rename), then delete it: a deletion cut
        short never leaves a half-deleted job that still looks submitted."""
        doomed = self._jobs / f"{_DELETING_MARK}{job_dir.name}-{os.getpid()}-{time.monotonic_ns()}"
        try:
            os.rename(job_dir, doomed)
        except FileNotFoundError:
            return
        shutil.rmtree(doomed, ignore_errors=True)
        for leftover in self._jobs.glob(f"{_DELETING_MARK}*"):  # earlier ones cut short
            shutil.rmtree(leftover, ignore_errors=True)
        for staged in self._jobs.glob(f"{_STAGING_MARK}*"):
            if _writer_gone(staged.name):  # a submitter killed mid-write: its captured values
                shutil.rmtree(staged, ignore_errors=True)

    def list_job_ids(self) -> list[str]:
        try:
            return sorted(
                entry.name
                for entry in self._jobs.iterdir()
                if entry.is_dir() and not entry.name.startswith((_STAGING_MARK, _DELETING_MARK))
            )
        except FileNotFoundError:
            return []
