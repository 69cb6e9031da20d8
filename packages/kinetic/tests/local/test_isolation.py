"""ensure_isolated_env: a cached venv of the project's requirements plus the runtime."""

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

import kinetic.local.isolation as isolation
from kinetic.local.isolation import ensure_isolated_env, find_uv
from kinetic_protocol.errors import ConfigError

WriteFiles = Callable[[Path, dict[str, str]], Path]
"""The ``write`` fixture: create files (relative path -> text) under a root, return it."""


def _no_uv() -> str:
    raise AssertionError("uv must not run on a cache hit")


def test_runtime_specs_follow_how_this_environment_installed_them() -> None:
    from importlib.metadata import distribution

    specs = dict(
        zip(isolation.RUNTIME_DISTRIBUTIONS, isolation.runtime_install_specs(), strict=True)
    )
    for name, spec in specs.items():
        direct = distribution(name).read_text("direct_url.json")
        if direct and json.loads(direct).get("url", "").startswith("file://"):
            assert Path(spec).is_dir(), (name, spec)
            assert Path(spec, "pyproject.toml").is_file()
        else:
            assert spec == f"{name}=={distribution(name).version}"
    assert specs["cloudpickle"] == f"cloudpickle=={distribution('cloudpickle').version}"


@pytest.mark.parametrize(
    ("direct_url", "expected"),
    [
        (None, None),
        ("not json", None),
        ('{"url": "https://x/y.whl", "archive_info": {}}', None),
        ('{"url": "file:///nonexistent/dir", "dir_info": {}}', None),
        ('{"url": "file:///tmp/pkg.whl", "archive_info": {}}', None),
    ],
)
def test_only_existing_local_directories_count_as_local_sources(
    direct_url: str | None, expected: str | None
) -> None:
    assert isolation._local_source(direct_url) == expected


def test_local_directory_source_is_decoded(tmp_path: Path) -> None:
    src = tmp_path / "my src"
    src.mkdir()
    url = json.dumps({"url": src.as_uri(), "dir_info": {"editable": True}})
    assert isolation._local_source(url) == str(src)


def test_missing_uv_is_a_config_error(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    monkeypatch.setattr("shutil.which", lambda _name: None)
    monkeypatch.setitem(sys.modules, "uv", None)  # makes `import uv` fail
    with pytest.raises(ConfigError, match="uv"):
        find_uv()


def test_a_complete_cached_env_is_returned_without_running_uv(
    write: WriteFiles, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = write(tmp_path / "proj", {"requirements.txt": "six\n"})
    cache = tmp_path / "cache"
    key = isolation._key(["six"], isolation.runtime_install_specs())
    (cache / key).mkdir(parents=True)
    (cache / key / isolation._COMPLETE_MARKER).write_text("ok\n")
    monkeypatch.setattr(isolation, "find_uv", _no_uv)
    assert ensure_isolated_env(project, cache_root=cache) == cache / key / "bin" / "python"


def test_a_bad_requirement_fails_with_uvs_output(write: WriteFiles, tmp_path: Path) -> None:
    project = write(tmp_path / "proj", {"requirements.txt": "numpy===[broken\n"})
    cache = tmp_path / "cache"
    with pytest.raises(ConfigError) as info:
        ensure_isolated_env(project, cache_root=cache)
    text = str(info.value)
    assert "numpy===[broken" in text
    assert str(project / "requirements.txt") in text
    assert "uv exited with" in text
    assert list(cache.iterdir()) == []  # nothing half-built left behind


@pytest.mark.slow
def test_a_real_env_is_created_once_and_reused(
    write: WriteFiles, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = write(tmp_path / "proj", {"requirements.txt": "six==1.16.0\n"})
    cache = tmp_path / "cache"
    python = ensure_isolated_env(project, cache_root=cache)
    probe = (
        "import sys, six, kinetic_runtime, kinetic_protocol, cloudpickle, msgspec\n"
        "import importlib.util as u\n"
        "print(six.__version__, sys.prefix, u.find_spec('kinetic') is None)"
    )
    out = subprocess.run(
        [str(python), "-c", probe], capture_output=True, text=True, check=True
    ).stdout.split()
    assert out[0] == "1.16.0"
    assert Path(out[1]).resolve() == python.parent.parent.resolve()
    assert out[2] == "True"  # the client itself is not installed, only the runtime side

    monkeypatch.setattr(isolation, "find_uv", _no_uv)
    assert ensure_isolated_env(project, cache_root=cache) == python
    assert [p.name for p in cache.iterdir()] == [python.parent.parent.name]
