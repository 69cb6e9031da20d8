"""What never goes into a code bundle: Kinetic's own state, hidden directories, a home dir."""

import os
import socket
import zipfile
from io import BytesIO
from pathlib import Path

import pytest

from kinetic import _log
from kinetic.packaging import build_bundle
from kinetic.packaging.bundle import scan
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


def _project_with_odd_entries(root: Path) -> socket.socket:
    """A project holding a listening Unix socket, a named pipe and a dangling link."""
    (root / "requirements.txt").write_text("")
    (root / "job.py").write_text("x = 1\n")
    (root / "fresh.py").symlink_to(root / "job.py")
    (root / "dangling.py").symlink_to(root / "nowhere.py")
    os.mkfifo(root / "editor.fifo")
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(root / "agent.sock"))
    server.listen()
    return server


@pytest.mark.timeout(20)
def test_sockets_named_pipes_and_dangling_links_are_left_out_unopened(tmp_path: Path) -> None:
    # Opening the named pipe would wait for a writer for ever, so the timeout is the failure.
    server = _project_with_odd_entries(tmp_path)
    try:
        bundle = build_bundle(tmp_path, cwd=tmp_path)
    finally:
        server.close()
    assert _names(bundle.data) == {"requirements.txt", "job.py", "fresh.py"}


@pytest.mark.timeout(20)
def test_each_entry_that_is_not_a_file_is_named_once_with_its_kind(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_log, "_noticed", set())
    server = _project_with_odd_entries(tmp_path)
    try:
        scanned = scan(tmp_path)
        build_bundle(tmp_path, cwd=tmp_path)
        build_bundle(tmp_path, cwd=tmp_path)
    finally:
        server.close()
    assert {(item.rel, item.rule) for item in scanned.not_files} == {
        ("agent.sock", "a socket"),
        ("editor.fifo", "a named pipe"),
        ("dangling.py", "a link that leads nowhere"),
    }
    notices = [r.getMessage() for r in caplog.records if "not regular" in r.getMessage()]
    assert len(notices) == 1
    assert all(name in notices[0] for name in ("agent.sock", "editor.fifo", "dangling.py"))


@pytest.mark.timeout(20)
def test_a_named_pipe_as_an_ignore_file_is_not_waited_on(tmp_path: Path) -> None:
    (tmp_path / "requirements.txt").write_text("")
    (tmp_path / "job.py").write_text("x = 1\n")
    os.mkfifo(tmp_path / ".gitignore")
    assert _names(build_bundle(tmp_path, cwd=tmp_path).data) == {"requirements.txt", "job.py"}
