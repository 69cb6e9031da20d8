"""What never goes into a code bundle: Kinetic's own state, hidden directories, a home dir."""

import zipfile
from io import BytesIO
from pathlib import Path

import pytest

from kinetic.packaging import build_bundle
from kinetic_protocol import ConfigError


def _names(data: bytes) -> set[str]:
    return set(zipfile.ZipFile(BytesIO(data)).namelist())


def test_kinetic_state_inside_the_project_is_left_out(tmp_path: Path) -> None:
    (tmp_path / "requirements.txt").write_text("")
    (tmp_path / "job.py").write_text("x = 1\n")
    home = tmp_path / "kinetic-home"
    (home / "store" / "bundles").mkdir(parents=True)
    (home / "store" / "bundles" / "old.zip").write_bytes(b"\0" * 1000)
    bundle = build_bundle(tmp_path, cwd=tmp_path, exclude=[home])
    assert _names(bundle.data) == {"requirements.txt", "job.py"}


def test_hidden_directories_are_left_out_but_hidden_files_are_kept(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    for hidden in (".ssh", ".git", ".venv", ".secret-tool"):
        (tmp_path / hidden).mkdir()
        (tmp_path / hidden / "file").write_text("private")
    (tmp_path / ".python-version").write_text("3.11\n")
    names = _names(build_bundle(tmp_path, cwd=tmp_path).data)
    assert names == {"pyproject.toml", ".python-version"}


def test_a_script_directly_in_the_home_directory_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / "script.py").write_text("print('hi')\n")
    with pytest.raises(ConfigError, match="whole home directory"):
        build_bundle(tmp_path, cwd=tmp_path)
