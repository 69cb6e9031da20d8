"""Helpers shared by the scenario tests: waiting on conditions, processes, scripts, the store."""

import os
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Iterator
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import pytest

import kinetic
from kinetic.backends import get_backend
from kinetic.config import resolve_settings
from kinetic_protocol import ObjectStore
from kinetic_runtime.local.claim import read_claimant
from kinetic_runtime.local.dispatch import CANCEL_MARKER
from kinetic_runtime.local.processes import may_kill_group
from kinetic_runtime.stores import open_store

__all__ = [
    "CLIENT_BACKENDS",
    "PER_CHILD_BACKENDS",
    "CONTRACT_BACKENDS",
    "ScenarioBackend",
    "backend_params",
    "client_only",
    "per_child_only",
    "pid_gone",
    "run_script",
    "wait_until",
]

_T = TypeVar("_T")

CONTRACT_BACKENDS = ("local", "gke", "pathways", "example")
"""Where a scenario of the backend contract runs (the default): every backend, since each
implements submit, status, logs, cancel, delete, listing and keys its own way."""
CLIENT_BACKENDS = ("local", "example-gcs")
"""Where a scenario runs whose behaviour is the client's or the runtime's, the same whatever
backend carries the job (decoration, serialisation, input modes, data planning, code shipping):
the local backend, and the example backend with its store and data in a ``gs://`` bucket
(fake-gcs-server), which takes the upload path the Kubernetes backends take, at process cost."""
_MARKS = {
    "gke": (pytest.mark.realk8s, pytest.mark.gcs),
    "pathways": (pytest.mark.realk8s, pytest.mark.gcs),
    "example-gcs": (pytest.mark.gcs,),
}

client_only = pytest.mark.backends(*CLIENT_BACKENDS)
"""Run a scenario on :data:`CLIENT_BACKENDS` instead of every backend."""
PER_CHILD_BACKENDS = tuple(name for name in CONTRACT_BACKENDS if name != "gke")
per_child_only = pytest.mark.backends(*PER_CHILD_BACKENDS)
"""Run a scenario of a batch's per-child path (a job and a record per attempt, client-side
retries, inputs left unsubmitted) on the backends whose batches take it: ``gke``'s are one
Indexed Job each (``Capabilities.array_batches``; ``test_batch_arrays.py``)."""


def backend_params(*names: str) -> list[Any]:
    """``names`` as pytest parameters carrying their tiers' marks: a backend reached through
    ``request.getfixturevalue`` is invisible to marker selection otherwise, so
    ``-m "not realk8s"`` would still run it."""
    return [pytest.param(name, marks=_MARKS.get(name, ()), id=name) for name in names]


DEFAULT_DEADLINE_S = 30.0
_CUSTOM_IMAGES = {"gke": "python:3.11-slim", "pathways": "python:3.11-slim"}
_ACCELERATORS = {"pathways": "tpu-v5litepod-2x4"}
"""What a scenario runs on: a 2-host TPU slice for pathways (multi-host only), else CPU."""


def wait_until(
    condition: Callable[[], _T], what: str, *, timeout: float = DEFAULT_DEADLINE_S
) -> _T:
    """Poll ``condition`` until it returns something truthy; else fail naming ``what``."""
    deadline = time.monotonic() + timeout
    delay = 0.002
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g}s waiting for {what}")
        time.sleep(delay)
        delay = min(delay * 2, 0.05)


def pid_gone(pid: int) -> bool:
    """True when ``pid`` has exited; a zombie awaiting its reaper counts as exited."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return True
    except OSError:  # no procfs (macOS): ask the kernel instead
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        return False
    state = stat.rsplit(")", 1)[1].split()[0]
    return state in {"Z", "X"}


@dataclass(frozen=True)
class ScenarioBackend:
    """The backend a scenario runs against; scenarios only use ``name`` and the methods here."""

    name: str

    @property
    def accelerator(self) -> str:
        return _ACCELERATORS.get(self.name, "cpu")

    @property
    def options(self) -> dict[str, str]:
        """``kinetic.run`` keywords for a script run in another process."""
        return {"accelerator": self.accelerator, "backend": self.name}

    def decorate(self, **options: Any) -> Callable[[Callable[..., Any]], Any]:
        """``kinetic.run(accelerator=<self.accelerator>, backend=<name>, **options)``.

        Kubernetes backends get a custom image (used as-is, so nothing is built): the node
        agent runs the pod's command with this interpreter whatever the image.
        """
        defaults = {"accelerator": self.accelerator, "backend": self.name}
        if self.name in _CUSTOM_IMAGES:
            defaults["container_image"] = _CUSTOM_IMAGES[self.name]
        return kinetic.run(**{**defaults, **options})

    def store(self) -> ObjectStore:
        """The object store this backend's jobs keep their artifacts in (as resolved now)."""
        settings = resolve_settings(backend=self.name, quiet=True)
        return open_store(get_backend(self.name, settings.backend_settings()).store_uri)


def run_script(
    source: str,
    cwd: Path,
    *,
    name: str = "script.py",
    timeout: float = 60,
    args: tuple[str, ...] = (),
) -> subprocess.CompletedProcess[str]:
    """Write ``source`` (dedented) to ``cwd/name`` and run it with this interpreter.

    The script inherits the test's environment (``KINETIC_HOME`` and friends). A non-zero exit
    fails the test with the script's output.
    """
    cwd.mkdir(parents=True, exist_ok=True)
    path = cwd / name
    path.write_text(textwrap.dedent(source))
    done = subprocess.run(
        [sys.executable, str(path), *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if done.returncode != 0:
        raise AssertionError(
            f"{name} exited {done.returncode}\n--- stdout\n{done.stdout}\n--- stderr\n{done.stderr}"
        )
    return done


def local_job_pids(kinetic_home: Path) -> Iterator[int]:
    """Supervisor pids (= process group ids) of every local job under ``kinetic_home`` whose
    group may still be killed as the job's, each job first marked cancelled, so that no job
    still waiting in line is started after this (the line's keeper drops it instead, and then
    exits). A supervisor caught claiming its job is named by its claim.

    A group is named by the one rule every kill of a job's group follows
    (``processes.may_kill_group``): the pid of a supervisor that ended long ago may be another
    process's now, a process group leader of another test (a line's keeper, a launcher), which
    a kill of its group would take down."""
    jobs = kinetic_home / "local" / "jobs"
    if not jobs.is_dir():
        return
    job_dirs = list(jobs.iterdir())
    for job_dir in job_dirs:
        with suppress(OSError):
            (job_dir / CANCEL_MARKER).touch()
    for job_dir in job_dirs:
        claimant = read_claimant(job_dir)  # a claim still being recorded names its claimant
        if claimant is not None and may_kill_group(claimant.identity):
            yield claimant.pid
