"""A backend of its own, found only through its ``kinetic.backends`` entry point: each job is a
detached ``python -m kinetic_runtime`` process on this machine, with its state in a directory.
Nothing in ``kinetic`` knows its name.

It is the backend ``docs/writing-a-backend.md`` builds, one block at a time (the docs test
checks that the page shows this whole file, then runs it through the conformance suite and two
scenarios), and the scenario suite's ``example`` backend: the portable scenarios run on it as on
``local`` and ``gke``.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

from kinetic_protocol import (
    NO_ENV,
    BackendSettings,
    Capabilities,
    ConfigError,
    HostSelection,
    JobRecord,
    JobState,
    JobStatus,
    Keyring,
    Preparation,
    PrepareRequest,
    runtime_args,
)
from kinetic_protocol.settings import SettingSpec
from kinetic_runtime.keydir import directory_keyring, replace_directory_keyring
from kinetic_runtime.local.processes import await_group_gone
from kinetic_runtime.settings import kinetic_home
from kinetic_runtime.stores import default_local_store_uri

__all__ = ["ROOT", "ExampleBackend", "ExampleGcsBackend"]

ROOT = SettingSpec(
    "example_root",
    "KINETIC_EXAMPLE_ROOT",
    "Where the example backend keeps its jobs.",
    "example-backend (tests)",
)


class ExampleBackend:
    """Runs each job as a detached process on this machine."""

    name = "example"
    capabilities = Capabilities(local_data=True, provisions_accelerators=False)
    declared_settings = (ROOT,)

    poll_bounds = (0.01, 0.1)
    """A job's state is one small file: poll often, and never more than 0.1 s apart."""

    def __init__(self, settings: BackendSettings) -> None:
        environ = settings.environ(self.declared_settings)  # read once, here
        self._root = Path(ROOT.value(environ) or kinetic_home() / "example")
        self.store_uri = settings.store_uri or default_local_store_uri()

    def prepare(self, request: PrepareRequest) -> Preparation:
        """Refuse what cannot run here before anything is written. Every job runs at once:
        there is no queue or priority class to admit it by."""
        for option, value in (("queue", request.queue), ("priority", request.priority)):
            if value is not None:
                raise ConfigError(
                    f"{option}={value!r}: the {self.name} backend has no queues, it runs "
                    f"every job at once. Leave {option}= unset."
                )
        return Preparation(backend_data={"prepared-by": self.name})

    def signing_keys(self, *, create: bool, refresh: bool = False) -> Keyring:
        """Kept on this machine's disk, where its jobs run and read them (nothing is
        cached, so ``refresh`` has nothing to read again)."""
        return directory_keyring(self._root / "keys", create=create)

    def replace_signing_keys(self, keyring: Keyring) -> None:
        replace_directory_keyring(self._root / "keys", keyring)

    _RUN = (
        "import subprocess, sys\n"
        "code = subprocess.call([sys.executable, '-m', 'kinetic_runtime', *sys.argv[1:]])\n"
        "open('exit', 'w').write(str(code))\n"
    )
    """What each job's process runs: the runtime, then its exit status, where
    :meth:`statuses` reads it."""

    def submit(self, record: JobRecord, *, env: Mapping[str, str] = NO_ENV) -> None:
        """Start the job's process, detached; a job submitted before is left alone."""
        job = self._root / record.job_id
        try:
            job.mkdir(parents=True)
        except FileExistsError:
            return  # submitted before
        keys = {"KINETIC_SIGNING_KEYS": str(self._root / "keys")}
        with (job / "output.log").open("ab") as log:
            process = subprocess.Popen(
                [sys.executable, "-c", self._RUN, *runtime_args(record)],
                cwd=job,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env={**os.environ, **env, **keys},
                start_new_session=True,
            )
        (job / "pid").write_text(str(process.pid))
        threading.Thread(target=process.wait, daemon=True).start()  # reap it when it ends

    def statuses(self, records: Sequence[JobRecord]) -> dict[str, JobState]:
        return {record.job_id: self._state(self._root / record.job_id) for record in records}

    @staticmethod
    def _state(job: Path) -> JobState:
        if not job.is_dir():
            return JobState(status=JobStatus.NOT_FOUND)
        try:
            code = int((job / "exit").read_text())
        except (FileNotFoundError, ValueError):
            return JobState(status=JobStatus.RUNNING)
        if code == 0:
            return JobState(status=JobStatus.SUCCEEDED)
        return JobState(status=JobStatus.FAILED, detail=f"exit {code}", exit_code=code)

    def logs(
        self, record: JobRecord, *, tail: int | None = None, host: HostSelection = None
    ) -> str:
        """One host only: ``host`` is accepted for the protocol, as a single host's output."""
        try:
            lines = (self._root / record.job_id / "output.log").read_text().splitlines(True)
        except FileNotFoundError:
            return ""
        if tail is None:
            return "".join(lines)
        return "".join(lines[-tail:]) if tail > 0 else ""

    def follow_logs(self, record: JobRecord, *, host: HostSelection = None) -> Iterator[str]:
        seen = 0
        while True:
            done = self.statuses([record])[record.job_id].status.is_terminal
            lines = self.logs(record).splitlines(True)
            yield from lines[seen:]
            seen = len(lines)
            if done:
                return
            time.sleep(self.poll_bounds[0])

    def delete(self, record: JobRecord, *, timeout: float, poll_interval: float) -> None:
        """Kill the job's process group, confirm it is gone, then forget the job."""
        job = self._root / record.job_id
        try:
            group = int((job / "pid").read_text())
        except (FileNotFoundError, ValueError):
            group = None
        if group is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(group, signal.SIGKILL)
            await_group_gone(group, timeout, poll_interval=min(poll_interval, 0.01))
        shutil.rmtree(job, ignore_errors=True)

    def list_job_ids(self) -> list[str]:
        if not self._root.is_dir():
            return []
        return sorted(p.name for p in self._root.iterdir() if p.name != "keys")  # see signing_keys


class ExampleGcsBackend(ExampleBackend):
    """The same processes, for jobs that cannot see this machine's files: the client uploads
    local data to the store (a ``gs://`` bucket in the scenarios), and the runtime fetches it,
    as on Kubernetes."""

    name = "example-gcs"
    capabilities = Capabilities(local_data=False, provisions_accelerators=False)
