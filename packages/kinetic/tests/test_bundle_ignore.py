"""Packaging controls: .kineticignore and .gitignore, secrets never shipped, the size warning."""

import io
import logging
import zipfile
from pathlib import Path

import pytest

from kinetic import _log
from kinetic.packaging import build_bundle
from kinetic.packaging import bundle as bundle_module
from kinetic.packaging import ignore as ignore_module

BASE = {
    "pyproject.toml": '[project]\nname = "proj"\nversion = "0"\n',
    "src/proj/__init__.py": "",
    "src/proj/model.py": "def f():\n    return 1\n",
}
SECRETS = [
    ".env",
    ".env.production",
    "server.pem",
    "tls/private.key",
    "cert.p12",
    "credentials.json",
    "config/gcp-credentials.json",
    "service-account-prod.json",
    "application_default_credentials.json",
    ".netrc",
    ".pypirc",
]


@pytest.fixture(autouse=True)
def isolated(monkeypatch: pytest.MonkeyPatch) -> None:
    """A fresh bundle cache, ignore-file matchers and notice memory; no inherited bundle
    settings."""
    monkeypatch.setattr(bundle_module, "_cache", {})
    ignore_module._matcher.cache_clear()
    monkeypatch.setattr(_log, "_noticed", set())
    monkeypatch.delenv("KINETIC_BUNDLE_GITIGNORE", raising=False)
    monkeypatch.delenv("KINETIC_BUNDLE_WARN_MB", raising=False)


def _make(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def _names(data: bytes) -> set[str]:
    return set(zipfile.ZipFile(io.BytesIO(data)).namelist())


def _notices(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "kinetic"]


def test_kineticignore_leaves_out_matching_files_and_directories(tmp_path: Path) -> None:
    root = _make(tmp_path / "proj", BASE)
    _make(root, {"data/train.csv": "1,2\n", "src/proj/data/x.bin": "0", "run.log": "x"})
    _make(root, {"logs/keep.log": "k", "notes/a.txt": "a"})
    (root / ".kineticignore").write_text("# data lives in GCS\ndata/\n*.log\n!keep.log\n")
    names = _names(build_bundle(root).data)
    assert names == {*BASE, ".kineticignore", "logs/keep.log", "notes/a.txt"}


def test_gitignore_is_honoured_root_and_nested_unless_turned_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _make(tmp_path / "proj", BASE)
    _make(root, {"out/model.ckpt": "w", "src/proj/gen/table.py": "", "src/proj/keep.py": ""})
    (root / ".gitignore").write_text("out/\n")
    (root / "src" / "proj" / ".gitignore").write_text("/gen/\n")
    names = _names(build_bundle(root).data)
    assert names == {*BASE, ".gitignore", "src/proj/.gitignore", "src/proj/keep.py"}

    monkeypatch.setenv("KINETIC_BUNDLE_GITIGNORE", "0")
    assert {"out/model.ckpt", "src/proj/gen/table.py"} <= _names(build_bundle(root).data)


def test_kineticignore_can_re_include_what_gitignore_leaves_out(tmp_path: Path) -> None:
    root = _make(tmp_path / "proj", {**BASE, "config.local.yaml": "a: 1\n", "x.tmp": ""})
    (root / ".gitignore").write_text("*.local.yaml\n*.tmp\n")
    (root / ".kineticignore").write_text("!config.local.yaml\n")
    names = _names(build_bundle(root).data)
    assert "config.local.yaml" in names and "x.tmp" not in names


def test_changing_kineticignore_changes_what_is_shipped_and_the_cache_still_works(
    tmp_path: Path,
) -> None:
    root = _make(tmp_path / "proj", {**BASE, "data/big.csv": "1\n" * 100})
    first = build_bundle(root)
    assert build_bundle(root).data is first.data  # unchanged files: the cached bundle
    (root / ".kineticignore").write_text("data/\n")
    second = build_bundle(root)
    assert "data/big.csv" not in _names(second.data)
    assert second.ref.sha256 != first.ref.sha256
    assert build_bundle(root).data is second.data
    (root / "data" / "more.csv").write_text("ignored, so nothing changes\n")
    assert build_bundle(root).ref.sha256 == second.ref.sha256


def test_a_changed_nested_gitignore_applies_at_the_next_scan(tmp_path: Path) -> None:
    """The decisions kept per ignore file's text never outlive a change of the file."""
    root = _make(tmp_path / "proj", {**BASE, "src/proj/gen/table.py": "", "src/proj/a.tmp": ""})
    (root / "src" / "proj" / ".gitignore").write_text("/gen/\n")
    assert _names(build_bundle(root).data) == {*BASE, "src/proj/.gitignore", "src/proj/a.tmp"}
    (root / "src" / "proj" / ".gitignore").write_text("*.tmp\n")
    assert _names(build_bundle(root).data) == {
        *BASE,
        "src/proj/.gitignore",
        "src/proj/gen/table.py",
    }


def test_the_same_gitignore_text_in_two_directories_applies_to_each_its_own(
    tmp_path: Path,
) -> None:
    root = _make(tmp_path / "proj", {**BASE, "a/gen/x.py": "", "b/gen/y.py": "", "gen/z.py": ""})
    (root / "a" / ".gitignore").write_text("/gen/\n")
    (root / "b" / ".gitignore").write_text("/gen/\n")
    names = _names(build_bundle(root).data)
    assert names == {*BASE, "a/.gitignore", "b/.gitignore", "gen/z.py"}


def test_an_unchanged_project_is_matched_against_its_ignore_files_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A submission scans the project again; the paths' answers are kept per ignore file's
    text, so pathspec is not asked again about a path it already answered."""
    from pathspec import GitIgnoreSpec

    root = _make(tmp_path / "proj", {**BASE, "data/x.csv": "1\n", "notes.md": "n"})
    (root / ".kineticignore").write_text("data/\n")
    (root / ".gitignore").write_text("*.log\n")
    asked: list[str] = []
    check_file = GitIgnoreSpec.check_file

    def counting(self: GitIgnoreSpec, file: str, *args: object) -> object:
        asked.append(file)
        return check_file(self, file, *args)

    monkeypatch.setattr(GitIgnoreSpec, "check_file", counting)
    first = build_bundle(root)
    assert asked  # the first scan matched every path
    asked.clear()
    assert build_bundle(root).data is first.data
    assert asked == []


def test_ignored_files_do_not_change_the_bytes(tmp_path: Path) -> None:
    one = _make(tmp_path / "a" / "proj", {**BASE, ".kineticignore": "scratch/\n"})
    two = _make(tmp_path / "b" / "proj", {**BASE, ".kineticignore": "scratch/\n"})
    _make(two, {"scratch/tmp.txt": "noise", "scratch/deep/x.bin": "more"})
    assert build_bundle(one).data == build_bundle(two).data


def test_secrets_are_never_bundled_and_one_notice_names_them(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    root = _make(tmp_path / "proj", {**BASE, "keys.py": "", "env.py": ""})
    _make(root, dict.fromkeys(SECRETS, "hunter2"))
    (root / ".kineticignore").write_text("!.env\n!*.pem\n")  # cannot bring secrets back
    with caplog.at_level(logging.WARNING, logger="kinetic"):
        names = _names(build_bundle(root).data)
        bundle_module._cache.clear()
        build_bundle(root)
    assert names == {*BASE, ".kineticignore", "keys.py", "env.py"}
    notices = [n for n in _notices(caplog) if "secret" in n]
    assert len(notices) == 1
    assert all(secret in notices[0] for secret in SECRETS)
    assert "never bundled" in notices[0]


def test_no_secret_notice_for_what_was_left_out_anyway(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    root = _make(tmp_path / "proj", {**BASE, ".env": "A=1", ".ssh/id_rsa": "k"})
    (root / ".gitignore").write_text(".env\n")
    with caplog.at_level(logging.WARNING, logger="kinetic"):
        assert _names(build_bundle(root).data) == {*BASE, ".gitignore"}
    assert _notices(caplog) == []


def test_a_large_bundle_warns_once_naming_the_five_largest_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    root = _make(tmp_path / "proj", BASE)
    for i in range(1, 8):
        (root / f"blob{i}.bin").write_bytes(b"\0" * (i * 100_000))
    with caplog.at_level(logging.WARNING, logger="kinetic"):
        build_bundle(root)  # under the 50 MiB default
        assert _notices(caplog) == []
        monkeypatch.setenv("KINETIC_BUNDLE_WARN_MB", "1")
        bundle_module._cache.clear()
        build_bundle(root)
        build_bundle(root)
    (notice,) = _notices(caplog)
    assert "KINETIC_BUNDLE_WARN_MB" in notice and "kinetic.Data" in notice
    assert ".kineticignore" in notice
    for i in range(3, 8):
        assert f"blob{i}.bin" in notice
    assert "blob2.bin" not in notice and "blob7.bin (683.6 KiB)" in notice


def test_a_warning_size_of_zero_never_warns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    root = _make(tmp_path / "proj", BASE)
    (root / "blob.bin").write_bytes(b"\0" * 2_000_000)
    monkeypatch.setenv("KINETIC_BUNDLE_WARN_MB", "0")
    with caplog.at_level(logging.WARNING, logger="kinetic"):
        build_bundle(root)
    assert _notices(caplog) == []
