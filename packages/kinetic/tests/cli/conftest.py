"""Fixtures for the CLI tests: an isolated Kinetic home, the CLI runner, real subprocesses."""

import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType

import pytest
from click.testing import CliRunner, Result

HERE = Path(__file__).resolve().parent
SUBPROCESS_TIMEOUT = 60


@pytest.fixture(scope="module")
def kinetic_env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A fresh ``KINETIC_HOME`` for the module, no inherited ``KINETIC_*``/project settings.

    ``KINETIC_STORE`` is set too, so this module gets backend objects of its own (backends are
    cached by their settings). Jobs still alive at the end are cancelled.
    """
    home = tmp_path_factory.mktemp("kinetic-home")
    with pytest.MonkeyPatch.context() as patch:
        for name in list(os.environ):
            if name.startswith("KINETIC_") or name == "GOOGLE_CLOUD_PROJECT":
                patch.delenv(name)
        patch.setenv("KINETIC_HOME", str(home))
        patch.setenv("KINETIC_STORE", (home / "store").as_uri())
        patch.setenv("KINETIC_PROFILES_FILE", str(home / "profiles.json"))
        patch.setenv("KINETIC_LOCAL_SLOTS", "4")
        patch.syspath_prepend(str(HERE))
        try:
            yield home
        finally:
            import kinetic

            for job in kinetic.list_jobs(backend="local"):
                job.cancel(cleanup_timeout=10, cleanup_poll_interval=0.05)


@pytest.fixture(scope="module")
def funcs(kinetic_env: Path) -> ModuleType:
    """The module of job functions (see ``kinetic_cli_jobfuncs.py``)."""
    import kinetic_cli_jobfuncs  # type: ignore[import-not-found]

    module: ModuleType = kinetic_cli_jobfuncs
    return module


Invoke = Callable[..., Result]


@pytest.fixture
def invoke() -> Invoke:
    """Run the CLI in-process: ``invoke("jobs", "status", job_id)``; stdout and stderr apart."""
    from kinetic.cli import cli

    def run(*args: str, env: dict[str, str] | None = None) -> Result:
        return CliRunner().invoke(
            cli, list(args), env=env, catch_exceptions=False, prog_name="kinetic"
        )

    return run


RunCli = Callable[..., "subprocess.CompletedProcess[str]"]


@pytest.fixture
def run_cli() -> RunCli:
    """``run_cli("jobs", "status", job_id)``: ``python -m kinetic ...`` in a real process, with
    this process's (patched) environment."""

    def run(*args: str) -> "subprocess.CompletedProcess[str]":
        return subprocess.run(
            [sys.executable, "-m", "kinetic", *args],
            capture_output=True,
            text=True,
            timeout=SUBPROCESS_TIMEOUT,
            check=False,
        )

    return run


@pytest.fixture
def popen_cli() -> Iterator[Callable[..., "subprocess.Popen[str]"]]:
    """Start ``python -m kinetic ...`` with piped output; killed at teardown if still running."""
    started: list[subprocess.Popen[str]] = []

    def start(*args: str) -> "subprocess.Popen[str]":
        process = subprocess.Popen(
            [sys.executable, "-m", "kinetic", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            bufsize=1,
        )
        started.append(process)
        return process

    yield start
    for process in started:
        if process.poll() is None:
            process.kill()
        process.communicate(timeout=SUBPROCESS_TIMEOUT)


WaitUntil = Callable[..., None]


@pytest.fixture
def wait_until() -> WaitUntil:
    """``wait_until(condition, "what")``: poll until true; fail naming ``what`` on timeout."""

    def wait(condition: Callable[[], bool], what: str, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        delay = 0.005
        while not condition():
            if time.monotonic() > deadline:
                pytest.fail(f"timed out after {timeout}s waiting for {what}")
            time.sleep(delay)
            delay = min(delay * 2, 0.1)

    return wait
