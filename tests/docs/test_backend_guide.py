"""The backend ``docs/writing-a-backend.md`` builds is a real file, and it runs: the page shows
all of ``tests/scenarios/example_backend.py``, block by block; the file keeps the whole backend
contract; and two scenarios run on it through a real entry point, as a user's program would."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from docs_support import DOCS, ROOT, python_blocks

from kinetic_protocol import BackendSettings
from kinetic_protocol.conformance import backend_problems

SCENARIOS = ROOT / "tests" / "scenarios"
sys.path.insert(0, str(SCENARIOS))

import example_backend  # noqa: E402  (the guide's backend, from the scenario suite)
from example_env import example_scenario_env  # noqa: E402, F401  (its entry point)

GUIDE = DOCS / "writing-a-backend.md"
BACKEND = Path(example_backend.__file__)


def _code_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip()]


def test_the_guide_shows_the_whole_backend_file_in_order() -> None:
    """Blank lines aside, the page's python blocks, one after the other, are the file."""
    shown = _code_lines("\n".join(python_blocks(GUIDE)))
    assert shown == _code_lines(BACKEND.read_text())


@pytest.mark.parametrize(
    "backend", [example_backend.ExampleBackend, example_backend.ExampleGcsBackend]
)
def test_the_guides_backend_keeps_the_whole_contract(backend: type, tmp_path: Path) -> None:
    assert backend_problems(backend) == []
    built = backend(BackendSettings(store_uri=tmp_path.as_uri()))
    assert backend_problems(built) == []


_A_JOB = """
import kinetic

@kinetic.run(accelerator="cpu", backend="example")
def greet(name):
    print(f"hello {name}")
    return len(name)

job = greet.run_async("kinetic")
print("value", job.result(timeout=120, cleanup=False))
print("status", job.status().value)
print("said hello", "hello kinetic" in job.tail(5).splitlines())
job.cleanup()
print("after cleanup", job.status().value)
"""

_A_BATCH = """
import kinetic

@kinetic.run(accelerator="cpu", backend="example")
def halve(n):
    if n % 2:
        raise ValueError(f"{n} is odd")
    return n // 2

batch = halve.run_async_map([2, 3, 4], retries=1)
print("results", batch.results(timeout=120, return_exceptions=True))
print("causes", batch.cause_counts())
print("attempts", [job.attempt for job in batch.jobs])
"""


def _run(script: str, project: Path) -> list[str]:
    """``script`` run in a project of its own, as a user's program, on the example backend."""
    (project / "pyproject.toml").write_text('[project]\nname = "guide-scenario"\nversion = "0"\n')
    (project / "main.py").write_text(script)
    ran = subprocess.run(
        [sys.executable, "main.py"],
        cwd=project,
        env=os.environ,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert ran.returncode == 0, f"{ran.stdout}\n{ran.stderr}"
    return ran.stdout.splitlines()


@pytest.mark.usefixtures("clean_kinetic_env", "example_scenario_env")
def test_a_job_returns_its_value_and_its_logs_and_is_cleaned_up(tmp_path: Path) -> None:
    assert _run(_A_JOB, tmp_path) == [
        "value 7",
        "status SUCCEEDED",
        "said hello True",
        "after cleanup NOT_FOUND",
    ]


@pytest.mark.usefixtures("clean_kinetic_env", "example_scenario_env")
def test_a_batch_retries_a_failed_input_and_reports_why_it_failed(tmp_path: Path) -> None:
    assert _run(_A_BATCH, tmp_path) == [
        "results [1, ValueError('3 is odd'), 2]",
        "causes {'user': 1}",
        "attempts [0, 1, 0]",
    ]
