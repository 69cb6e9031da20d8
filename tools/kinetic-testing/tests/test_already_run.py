"""``KINETIC_TESTS_ALREADY_RUN``: ``.ci/run`` runs each backend package's tests once, in an
environment of its own, and the README's command after it leaves them out, saying so."""

import os
import subprocess
import sys
from pathlib import Path

from kinetic_testing.pytest_plugin import ALREADY_RUN_ENV


def test_directories_that_already_ran_are_left_out_and_named(tmp_path: Path) -> None:
    for name in ("ran", "fresh"):
        (tmp_path / name / "tests").mkdir(parents=True)
        (tmp_path / name / "tests" / f"test_{name}.py").write_text(f"def test_{name}(): pass\n")
    (tmp_path / "pytest.ini").write_text(
        "[pytest]\naddopts = -p kinetic_testing.pytest_plugin -p no:cacheprovider\n"
    )
    env = {**os.environ, ALREADY_RUN_ENV: os.pathsep.join(["ran/tests", "missing/tests"])}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-v"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "test_fresh PASSED" in done.stdout
    assert "test_ran" not in done.stdout.replace("ran/tests: not run again", "")
    assert f"ran/tests: not run again here, it ran already ({ALREADY_RUN_ENV})" in done.stdout
    assert "missing/tests" not in done.stdout
