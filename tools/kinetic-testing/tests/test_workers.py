"""How many test workers a run gets: the whole suite (no paths named) runs on one more than the
CPUs, a run of chosen paths in one process, and ``KINETIC_TEST_WORKERS`` overrides both."""

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

_INI = """\
[pytest]
addopts = -p kinetic_testing.pytest_plugin -p no:cacheprovider -n auto
testpaths = tests
"""


def _run(
    project: Path, *args: str, workers: str | None = None, cpus: set[int] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run pytest in ``project``, on the CPUs ``cpus`` when given."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KINETIC_", "PYTEST_"))}
    if workers is not None:
        env["KINETIC_TEST_WORKERS"] = workers
    argv = [sys.executable, "-m", "pytest", "-q", *args]
    if cpus is not None:  # set in the child, not by preexec_fn: a fork of a JAX process warns
        argv = [
            sys.executable, "-c",
            f"import os, sys; os.sched_setaffinity(0, {sorted(cpus)!r}); "
            "os.execv(sys.executable, sys.argv[1:])",
            *argv,
        ]  # fmt: skip
    return subprocess.run(
        argv, cwd=project, env=env, capture_output=True, text=True, timeout=240, check=False
    )


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """Four tests that each record which worker ran them (``main``: no worker)."""
    (tmp_path / "pytest.ini").write_text(_INI)
    tests = tmp_path / "tests"
    tests.mkdir()
    (tests / "test_where.py").write_text(
        textwrap.dedent(
            f"""
            import os
            import pytest

            @pytest.mark.parametrize("n", range(4))
            def test_record(n):
                worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
                count = os.environ.get("PYTEST_XDIST_WORKER_COUNT", "0")
                with open({str(tmp_path / "ran")!r}, "a") as ran:
                    ran.write(f"{{worker}} {{count}}\\n")
            """
        )
    )
    return tmp_path


def _ran(project: Path) -> set[str]:
    return set((project / "ran").read_text().splitlines())


def _worker_counts(project: Path) -> set[str]:
    counts = {line.split()[1] for line in _ran(project)}
    (project / "ran").unlink()
    return counts


def test_the_whole_suite_runs_on_one_worker_more_than_its_cpus(project: Path) -> None:
    first_two = set(sorted(os.sched_getaffinity(0))[:2])
    done = _run(project, cpus=first_two)
    assert done.returncode == 0, done.stdout + done.stderr
    assert _worker_counts(project) == {str(len(first_two) + 1)}
    one = {min(first_two)}
    assert _run(project, cpus=one).returncode == 0
    assert _worker_counts(project) == {"2"}


def test_auto_gives_a_run_of_chosen_paths_the_whole_suites_workers(project: Path) -> None:
    done = _run(project, "tests/test_where.py", workers="auto", cpus={min(os.sched_getaffinity(0))})
    assert done.returncode == 0, done.stdout + done.stderr
    assert _worker_counts(project) == {"2"}


def test_a_run_of_chosen_paths_stays_in_one_process(project: Path) -> None:
    done = _run(project, "tests/test_where.py")
    assert done.returncode == 0, done.stdout + done.stderr
    assert _ran(project) == {"main 0"}


def test_the_number_of_workers_can_be_chosen(project: Path) -> None:
    assert _run(project, workers="0").returncode == 0
    assert _ran(project) == {"main 0"}
    (project / "ran").unlink()
    assert _run(project, "tests/test_where.py", workers="3").returncode == 0
    assert {line.split()[1] for line in _ran(project)} == {"3"}


def test_a_number_of_workers_that_is_no_number_is_refused_naming_it(project: Path) -> None:
    done = _run(project, workers="many")
    assert done.returncode != 0
    assert "KINETIC_TEST_WORKERS='many' is not a number of test workers" in done.stderr
