"""Everything Kinetic writes under its home and in the local store is 0600 / 0700, whatever
the umask: the client's files, a local job's directory and what the job itself writes."""

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
import scenario_funcs as uf
from scenario_support import ScenarioBackend

from kinetic.config import Profile, ProfilesFile, profiles_path, save_profiles
from kinetic_runtime.private_files import make_private_dirs, write_private


@pytest.fixture(params=[0o022, 0o000], ids=["umask-022", "umask-000"])
def umask(request: pytest.FixtureRequest) -> Iterator[int]:
    previous = os.umask(request.param)
    try:
        yield request.param
    finally:
        os.umask(previous)


def _not_private(root: Path) -> list[str]:
    """Every path under ``root`` (and ``root``) whose mode is not 0700 (directories) or 0600
    (files): one line each, with its mode."""
    wrong = []
    for path in [root, *root.rglob("*")]:
        mode = path.lstat().st_mode
        if stat.S_ISLNK(mode):
            continue
        expected = 0o700 if stat.S_ISDIR(mode) else 0o600
        if stat.S_IMODE(mode) != expected:
            wrong.append(f"{oct(stat.S_IMODE(mode))} {path.relative_to(root)}")
    return wrong


def test_a_local_jobs_files_and_the_store_are_private(
    local_backend: ScenarioBackend,
    isolated_kinetic: Path,
    umask: int,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("SCN_SECRET", "value")
    captured = local_backend.decorate(capture_env_vars=["SCN_SECRET"])
    done = captured(uf.write_output).run_async("metrics.txt", "loss=0.1")
    failed = local_backend.decorate()(uf.fail_with).run_async("boom", 3)
    done.wait(timeout=120)
    with pytest.raises(uf.ScenarioError):
        failed.result(timeout=120)  # a failed job's directory is kept
    assert (isolated_kinetic / "local" / "jobs" / failed.job_id).is_dir()
    assert (isolated_kinetic / "store" / "outputs" / done.job_id / "metrics.txt").is_file()
    assert _not_private(isolated_kinetic) == []


def test_the_profiles_file_is_private(isolated_kinetic: Path, umask: int) -> None:
    save_profiles(ProfilesFile(active="dev", profiles={"dev": Profile(project="p")}))
    path = profiles_path()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    save_profiles(ProfilesFile(active="dev", profiles={"dev": Profile(project="q")}))
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_private_writes_ignore_the_umask(tmp_path: Path, umask: int) -> None:
    make_private_dirs(tmp_path / "a" / "b")
    write_private(tmp_path / "a" / "b" / "f", b"x")
    assert _not_private(tmp_path / "a") == []
