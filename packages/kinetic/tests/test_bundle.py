"""The code bundle: same files, same bytes, same hash; the job stands where the caller stood."""

import io
import os
import sys
import zipfile
from pathlib import Path

import pytest

from kinetic.packaging import build_bundle, find_project_root
from kinetic.packaging import bundle as bundle_module

FILES = {
    "pyproject.toml": '[project]\nname = "proj"\nversion = "0"\n',
    "src/proj/__init__.py": "",
    "src/proj/model.py": "def f():\n    return 1\n",
    "scripts/train.py": "print('hi')\n",
    "data/config.json": '{"lr": 0.1}',
}
SKIPPED = [
    ".git/HEAD",
    ".venv/lib/site.py",
    "src/proj/__pycache__/model.cpython-311.pyc",
    "node_modules/x/index.js",
    "proj.egg-info/PKG-INFO",
    "build/lib/proj/model.py",
    "src/proj/stale.pyc",
]


@pytest.fixture(autouse=True)
def fresh_bundle_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test zips from scratch rather than reusing a bundle cached by an earlier one."""
    monkeypatch.setattr(bundle_module, "_cache", {})


def _make(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def _names(data: bytes) -> list[str]:
    return zipfile.ZipFile(io.BytesIO(data)).namelist()


def test_the_same_files_give_the_same_bytes_anywhere_and_anytime(tmp_path: Path) -> None:
    first = _make(tmp_path / "a" / "proj", FILES)
    second = _make(tmp_path / "elsewhere" / "copy", dict(reversed(FILES.items())))
    os.utime(second / "scripts" / "train.py", (1, 1))  # timestamps do not matter
    one, two = build_bundle(first / "src"), build_bundle(second / "src")
    assert one.root == first.resolve() and two.root == second.resolve()
    assert one.data == two.data
    assert one.ref.sha256 == two.ref.sha256
    assert one.ref.key == f"bundles/{one.ref.sha256}.zip"
    assert one.ref.size == len(one.data)


def test_entries_are_sorted_with_fixed_timestamps_and_modes(tmp_path: Path) -> None:
    root = _make(tmp_path / "proj", FILES)
    archive = zipfile.ZipFile(io.BytesIO(build_bundle(root).data))
    names = archive.namelist()
    assert names == sorted(FILES)
    for info in archive.infolist():
        assert info.date_time == (1980, 1, 1, 0, 0, 0)
        assert info.external_attr >> 16 == 0o644


def test_a_changed_or_added_file_changes_the_hash(tmp_path: Path) -> None:
    root = _make(tmp_path / "proj", FILES)
    before = build_bundle(root).ref.sha256
    (root / "src" / "proj" / "model.py").write_text("def f():\n    return 2\n")
    changed = build_bundle(root).ref.sha256
    (root / "src" / "proj" / "new.py").write_text("")
    added = build_bundle(root).ref.sha256
    assert len({before, changed, added}) == 3


def test_caches_virtualenvs_and_build_output_are_left_out(tmp_path: Path) -> None:
    root = _make(tmp_path / "proj", FILES)
    clean = build_bundle(root)
    _make(root, dict.fromkeys(SKIPPED, "junk"))
    with_junk = build_bundle(root)
    assert _names(with_junk.data) == sorted(FILES)
    assert with_junk.ref.sha256 == clean.ref.sha256


def test_the_project_root_is_the_nearest_ancestor_with_a_marker(tmp_path: Path) -> None:
    root = _make(tmp_path / "proj", FILES)
    assert find_project_root(root / "src" / "proj") == root.resolve()
    bare = tmp_path / "bare" / "dir"
    bare.mkdir(parents=True)
    assert find_project_root(bare) == bare.resolve()


def test_workdir_and_import_roots_are_relative_to_the_project(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _make(tmp_path / "proj", FILES).resolve()
    outside = tmp_path / "outside"
    outside.mkdir()
    # The real entries stay behind (outside the project, so never import roots): the bundle
    # imports its ignore-file parser on first use.
    fake = [str(root / "src"), str(outside), "/usr/lib/python3"]
    monkeypatch.setattr(sys, "path", [*fake, *sys.path])
    bundle = build_bundle(root / "scripts", cwd=root / "scripts")
    assert bundle.workdir == "scripts"
    assert bundle.sys_path[:2] == ["src", "scripts"]
    assert "." in bundle.sys_path
    assert not any(entry.startswith(("..", "/")) for entry in bundle.sys_path)
    assert build_bundle(root, cwd=outside).workdir == "."


def test_a_site_packages_directory_inside_the_project_is_not_an_import_root(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _make(tmp_path / "proj", FILES).resolve()
    site = root / ".venv" / "lib" / "python3.11" / "site-packages"
    site.mkdir(parents=True)
    monkeypatch.setattr(sys, "path", [str(site), str(root / "src"), *sys.path])
    assert build_bundle(root, cwd=root).sys_path == ["src", "."]


def test_an_oversized_project_is_refused_naming_the_largest_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kinetic_protocol import ConfigError

    root = _make(tmp_path / "proj", FILES)
    (root / "weights.bin").write_bytes(b"\0" * 4096)
    monkeypatch.setattr(bundle_module, "MAX_BUNDLE_BYTES", 1024)
    with pytest.raises(ConfigError, match=r"weights\.bin") as caught:
        build_bundle(root)
    assert "kinetic.Data" in str(caught.value)
