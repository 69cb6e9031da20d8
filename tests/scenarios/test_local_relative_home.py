"""A relative ``KINETIC_HOME`` is taken from the submitter's working directory.

The job's processes run in another directory, so every path handed to them must be absolute;
a relative home once made every local job fail with an empty log.
"""

from pathlib import Path

import pytest
from scenario_support import run_script


def test_a_job_submitted_with_a_relative_home_runs_and_keeps_its_files_there(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KINETIC_HOME", "relative/dir")
    cwd = tmp_path / "submitter"
    done = run_script(
        """
        import os
        import kinetic

        @kinetic.run(accelerator="cpu", backend="local")
        def where(n):
            return n + 1, os.environ["KINETIC_HOME"]

        job = where.run_async(41)
        print("JOB", job.job_id)
        print("RESULT", job.result(timeout=60, cleanup=False))
        """,
        cwd,
    )
    job_id = done.stdout.split("JOB ", 1)[1].split()[0]
    home = cwd / "relative" / "dir"
    assert f"RESULT (42, {str(home)!r})" in done.stdout
    job_dir = home / "local" / "jobs" / job_id
    assert (job_dir / "state.json").is_file()
    assert '"phase": "SUCCEEDED"' in (job_dir / "state.json").read_text()
    assert any((home / "store").rglob("*")), "the default store is not under the relative home"
