"""A local submission that fails (a full disk) runs nothing and leaves nothing behind.

The failing write is made deterministic by patching the local backend's private-file writers
for one of the job directory's files, in this process: ``launch.json``, or the job's ticket in
the line of waiting jobs (written last, after the directory).
"""

import errno
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import scenario_funcs as uf
from local_start_paths import start_path
from scenario_support import ScenarioBackend

from kinetic.local import backend as local_backend_module
from kinetic_protocol import BackendError

__all__ = ["start_path"]  # a fixture, used by name


@pytest.mark.parametrize("failing", ["launch.json", "ticket"])
def test_a_submission_that_cannot_write_its_files_runs_nothing(
    failing: str,
    start_path: str,
    local_backend: ScenarioBackend,
    tmp_path: Path,
    isolated_kinetic: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    jobs = isolated_kinetic / "local" / "jobs"

    def failing_writer(real: Any) -> Any:
        def full_disk(path: Path, data: bytes, *args: Any, **kwargs: Any) -> None:
            if path.name == failing and path.parent.parent == jobs:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
            real(path, data, *args, **kwargs)

        return full_disk

    real_writer = local_backend_module.write_private
    monkeypatch.setattr(local_backend_module, "write_private", failing_writer(real_writer))

    def full_line(slots_dir: Path, name: str) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(slots_dir / name))

    if failing == "ticket":  # the job's record in line: written last (issue 53)
        monkeypatch.setattr(local_backend_module, "join_line", full_line)
    gate, marker = tmp_path / "gate", tmp_path / "ran"
    gate.touch()  # a job that got through runs to its end at once

    with pytest.raises(BackendError, match="No space left on device") as raised:
        local_backend.decorate()(uf.hold).run_async(str(gate), "ran", str(marker))

    assert not marker.exists(), "the refused job ran"
    assert list(jobs.iterdir()) == [], "the refused job's directory was left behind"
    assert "nothing was started" in str(raised.value)
    assert "disk is full" in str(raised.value)


def test_a_submitter_killed_while_writing_leaves_no_captured_values_behind(
    local_backend: ScenarioBackend, tmp_path: Path, isolated_kinetic: Path
) -> None:
    """Killed between writing a job's captured values and renaming its directory into place,
    a submitter left ``.incoming-*`` holding them for ever; the next cleanup now removes it,
    but never the staging of a writer that is still alive."""
    jobs = isolated_kinetic / "local" / "jobs"
    script = tmp_path / "killed.py"
    script.write_text(
        "import os, signal\n"
        "import kinetic\n"
        "from kinetic.local import backend\n"
        "real = backend.write_private\n"
        "def write_then_die(path, data, *args, **kwargs):\n"
        "    real(path, data, *args, **kwargs)\n"
        "    if path.name == 'captured-env.json':\n"
        "        os.kill(os.getpid(), signal.SIGKILL)\n"
        "backend.write_private = write_then_die\n"
        "f = kinetic.run(accelerator='cpu', backend='local', capture_env_vars=['TOKEN'])(print)\n"
        "f.run_async('never')\n"
    )
    killed = subprocess.run(
        [sys.executable, str(script)],
        env={**os.environ, "TOKEN": "s3cret"},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    [left] = [entry for entry in jobs.iterdir() if entry.name.startswith(".incoming-")]
    assert "s3cret" in (left / "captured-env.json").read_text()
    alive = jobs / f".incoming-some-job-{os.getpid()}-abcdefgh"  # a writer still at work
    alive.mkdir()

    assert local_backend.decorate()(uf.add).run_async(1, 2).result(timeout=120) == 3

    assert not left.exists(), "the killed submitter's captured values are still on disk"
    assert alive.exists(), "a live writer's staging directory was removed"


@pytest.mark.parametrize("launcher", ["1", "0"], ids=["launcher", "no-launcher"])
def test_a_kinetic_found_only_through_pythonpath_runs_local_jobs(
    local_backend: ScenarioBackend, tmp_path: Path, launcher: str
) -> None:
    """Kinetic installed with ``pip install --target`` (or a source checkout) is found only
    through ``PYTHONPATH``, which a local job does not inherit: its first job failed with "No
    module named kinetic_runtime" unless a launcher happened to be running already."""
    import sysconfig

    import kinetic
    import kinetic_protocol
    import kinetic_runtime

    base = sys._base_executable  # this interpreter without the workspace's virtual env
    sources = [
        Path(str(m.__file__)).parents[1] for m in (kinetic, kinetic_runtime, kinetic_protocol)
    ]
    path = os.pathsep.join(map(str, [*sources, sysconfig.get_paths()["purelib"]]))
    env = {**os.environ, "PYTHONPATH": path, "KINETIC_LOCAL_LAUNCHER": launcher}
    alone = subprocess.run(
        [base, "-c", "import kinetic"], env={**env, "PYTHONPATH": ""}, check=False
    )
    assert alone.returncode != 0, "the base interpreter has Kinetic installed: nothing to show"
    script = tmp_path / "through_path.py"
    script.write_text(
        "import kinetic\nprint(kinetic.run(accelerator='cpu', backend='local')(abs)(-3))\n"
    )
    done = subprocess.run(
        [base, str(script)], env=env, capture_output=True, text=True, timeout=180, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.splitlines()[-1] == "3"


def test_a_client_environment_too_large_to_pass_to_a_new_process_still_runs_its_jobs(
    start_path: str, local_backend: ScenarioBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The launcher and the line's keeper, which a client starts, are given what a job inherits
    of this machine, not the client's whole environment: one variable over Linux's 128 KiB
    kept them from starting (the submission was refused, "Argument list too long")."""
    monkeypatch.setenv("LARGE_VARIABLE", "x" * 200_000)
    assert local_backend.decorate()(uf.add).run_async(1, 2).result(timeout=60) == 3
