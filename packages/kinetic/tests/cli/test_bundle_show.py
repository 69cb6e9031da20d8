"""``kinetic bundle show``: what would be shipped, with sizes and a total, and what not and why."""

import json
import os
import socket
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import Result

Invoke = Callable[..., Result]

FILES = {
    "pyproject.toml": "[project]\nname = 'p'\n",
    "src/p/__init__.py": "",
    "src/p/train.py": "x = 1\n" * 300,
    "data/big.csv": "1,2\n",
    "debug.log": "noise\n",
    ".env": "TOKEN=1\n",
    "server.pem": "-----BEGIN-----\n",
    ".ssh/id_rsa": "key\n",
    ".kineticignore": "data/\n",
    ".gitignore": "*.log\n",
    "src/p/__pycache__/train.cpython-311.pyc": "",
}


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("KINETIC_HOME", str(tmp_path / "kinetic-home"))
    monkeypatch.delenv("KINETIC_BUNDLE_GITIGNORE", raising=False)
    root = tmp_path / "proj"
    for rel, text in FILES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root.resolve()


SHIPPED = [".gitignore", ".kineticignore", "pyproject.toml", "src/p/__init__.py", "src/p/train.py"]
EXCLUDED = {
    ".env": "secret",
    ".ssh/": "secret",
    "data/": "ignored",
    "debug.log": "ignored",
    "server.pem": "secret",
    "src/p/__pycache__/": "default",
}


def test_json_lists_shipped_files_sizes_total_and_what_was_left_out_and_why(
    invoke: Invoke, project: Path
) -> None:
    result = invoke("bundle", "show", str(project / "src"), "--json")
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["root"] == str(project)
    assert [f["path"] for f in doc["files"]] == SHIPPED
    sizes = {f["path"]: f["size"] for f in doc["files"]}
    assert sizes["src/p/train.py"] == len(FILES["src/p/train.py"])
    assert doc["total_bytes"] == sum(len(FILES[p]) for p in SHIPPED)
    assert doc["file_count"] == len(SHIPPED)
    assert {e["path"]: e["reason"] for e in doc["excluded"]} == EXCLUDED
    rules = {e["path"]: e["rule"] for e in doc["excluded"]}
    assert rules["data/"] == ".kineticignore: data/"
    assert rules["debug.log"] == ".gitignore: *.log"


def test_text_defaults_to_the_current_directorys_project(
    invoke: Invoke, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(project / "src" / "p")
    result = invoke("bundle", "show")
    assert result.exit_code == 0, result.stderr
    out = result.stdout
    assert str(project) in out
    for rel in SHIPPED:
        assert rel in out
    assert "1.8 KiB" in out  # train.py
    assert f"Total: {len(SHIPPED)} files" in out
    for rel, reason in EXCLUDED.items():
        line = next(line for line in out.splitlines() if line.startswith(rel + " "))
        assert reason in line


def test_a_home_directory_is_refused_with_exit_2(
    invoke: Invoke, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    result = invoke("bundle", "show", str(tmp_path))
    assert result.exit_code == 2
    assert "whole home directory" in result.stderr


def test_kinetic_state_inside_the_project_is_left_out(
    invoke: Invoke, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KINETIC_HOME", str(project / "state"))
    monkeypatch.setenv("KINETIC_STORE", (project / "store").as_uri())
    for rel in ("state/profiles.json", "store/bundles/old.zip"):
        (project / rel).parent.mkdir(parents=True)
        (project / rel).write_text("{}")
    doc = json.loads(invoke("bundle", "show", str(project), "--json").stdout)
    assert [f["path"] for f in doc["files"]] == SHIPPED
    reasons = {e["path"]: e["reason"] for e in doc["excluded"]}
    assert reasons["state/"] == reasons["store/"] == "kinetic-state"


@pytest.mark.timeout(20)
def test_a_socket_and_a_named_pipe_are_listed_as_left_out_and_why(
    invoke: Invoke, project: Path
) -> None:
    os.mkfifo(project / "editor.fifo")
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as server:
        server.bind(str(project / "agent.sock"))
        server.listen()
        doc = json.loads(invoke("bundle", "show", str(project), "--json").stdout)
        text = invoke("bundle", "show", str(project)).stdout
    assert [f["path"] for f in doc["files"]] == SHIPPED
    excluded = {e["path"]: (e["reason"], e["rule"]) for e in doc["excluded"]}
    assert excluded["agent.sock"] == ("not-a-file", "a socket")
    assert excluded["editor.fifo"] == ("not-a-file", "a named pipe")
    assert "a named pipe" in text
