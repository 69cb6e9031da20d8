"""Helpers shared by the batch scenarios (imported by plain name, like the other helpers)."""

import os
import shutil
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest
from scenario_support import ScenarioBackend

from kinetic_protocol import layout

__all__ = [
    "SCENARIOS_DIR",
    "private_project",
    "rounds_from_env",
    "start_script",
    "batch_thread_ends",
    "batch_threads",
    "child_keys",
    "children",
    "four_local_slots",
    "join_batch_thread",
    "stored_job_ids",
]


def rounds_from_env(name: str, default: int) -> int:
    """How many rounds a fault test runs: ``default`` in the suite, more when ``name`` is set
    (a long soak is a benchmark-sized run, not every run's cost)."""
    raw = os.environ.get(name, "")
    if not raw:
        return default
    try:
        rounds = int(raw)
    except ValueError:
        rounds = 0
    if rounds < 1:
        raise pytest.UsageError(
            f"{name}={raw!r} is not a positive number of rounds; unset it for the suite's "
            f"{default}, or give a count such as 20"
        )
    return rounds


@pytest.fixture(autouse=True)
def four_local_slots(isolated_kinetic: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Room for a few blocked jobs plus the ones that must run beside them (local backend)."""
    monkeypatch.setenv("KINETIC_LOCAL_SLOTS", "4")


def batch_thread_ends(group_id: str) -> bool:
    """Wait (30 s at most) for the batch's submitter thread, if any; True once it has ended."""
    for thread in threading.enumerate():
        if thread.name == f"kinetic-batch-{group_id}":
            thread.join(timeout=30)
            return not thread.is_alive()
    return True


def join_batch_thread(group_id: str) -> None:
    assert batch_thread_ends(group_id), f"the submitter of {group_id} did not end"


def children(backend: ScenarioBackend, group_id: str) -> list[str]:
    """The keys of every child record the store holds for the batch."""
    return backend.store().list(layout.children_prefix(group_id))


def child_keys(backend: ScenarioBackend, group_id: str) -> list[tuple[int, int]]:
    """``(index, attempt)`` of every child record the store holds for the batch."""
    return [layout.parse_child_key(key) for key in children(backend, group_id)]


def stored_job_ids(backend: ScenarioBackend) -> set[str]:
    return {key.split("/")[1] for key in backend.store().list("jobs/")}


def batch_threads(group_id: str) -> list[threading.Thread]:
    """The batch's live submitter threads (none for a synchronous batch)."""
    return [t for t in threading.enumerate() if t.name == f"kinetic-batch-{group_id}"]


SCENARIOS_DIR = str(Path(__file__).resolve().parent)


def start_script(cwd: Path, source: str, *args: str) -> "subprocess.Popen[str]":
    """Start ``source`` (dedented) as a separate Python process in ``cwd``, able to import the
    scenarios' helper modules, with its stdout and stderr piped as text.

    The script turns Ctrl-C into ``KeyboardInterrupt``, as a script started from a terminal
    does, whatever this process inherited: a test run started in the background of a shell
    script ignores SIGINT, its children inherit that, and Python then leaves it ignored.
    """
    script = cwd / "submitter.py"
    preamble = (
        "import signal, sys\n"
        "signal.signal(signal.SIGINT, signal.default_int_handler)\n"
        f"sys.path.insert(0, {SCENARIOS_DIR!r})\n"
    )
    script.write_text(preamble + textwrap.dedent(source))
    return subprocess.Popen(
        [sys.executable, str(script), *args],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def private_project(root: Path, module: str) -> Path:
    """A one-module project under ``root`` holding a copy of the scenarios' ``module``.

    A job ships its function's whole project; from the scenarios' own directory that is this
    repository, which every job would unpack. A script that puts this project first on
    ``sys.path`` ships one small module instead.
    """
    project = root / "project"
    if not project.exists():
        project.mkdir(parents=True)
        (project / "pyproject.toml").write_text('[project]\nname = "work"\nversion = "0"\n')
        shutil.copyfile(Path(SCENARIOS_DIR) / f"{module}.py", project / f"{module}.py")
    return project


def died_submitting(tmp_path: Path, script: str) -> tuple[str, Path]:
    """Run ``script`` (a batch submitter that ``os._exit(9)``s on purpose, given a runs
    directory and a private project of ``durability_userfuncs``); its group id and runs."""
    runs = tmp_path / "runs"
    runs.mkdir()
    project = private_project(tmp_path, "durability_userfuncs")
    process = start_script(tmp_path, script, str(runs), str(project))
    out, err = process.communicate(timeout=120)
    assert process.returncode == 9, err
    return out.split()[0], runs


def dies_after_recording(retries: int = 0) -> str:
    """A batch submitter (for :func:`died_submitting`) that records input 1's child and dies
    before creating its job: a write-ahead record with nothing behind it."""
    return _DIES_AFTER_RECORDING.replace("RETRIES", str(retries))


_DIES_AFTER_RECORDING = """
    import os
    import sys
    sys.path.insert(0, sys.argv[2])
    import kinetic
    import durability_userfuncs as uf
    from kinetic.batch import submitter

    def record_then_die(backend, records, record, **kw):
        if record.group_index == 1:
            records.add_child(record.group_index, record.attempt, record.job_id)
            os._exit(9)  # after the child's record, before its backend resource
        return real(backend, records, record, **kw)

    real, submitter.submit_child = submitter.submit_child, record_then_die
    traced = kinetic.run(accelerator="cpu", backend="local")(uf.traced)
    batch = traced.run_async_map(
        [{"index": i, "runs": sys.argv[1]} for i in range(4)], max_concurrent=1, retries=RETRIES
    )
    print(batch.group_id, flush=True)
    batch.wait(timeout=60)
"""
