"""A local virtual environment with exactly what a bundled image would hold.

``ensure_isolated_env`` lets the local backend (``isolate=True``) run the runtime against the
project's declared requirements rather than the developer's own environment, so a missing or
conflicting dependency shows up before a cloud build. The environment holds the project's
requirements plus ``kinetic-runtime``, ``kinetic-protocol``, ``cloudpickle`` and ``msgspec`` as
installed here: from their local source tree when this environment installed them from one
(a workspace checkout), else pinned to the same versions. It is cached under
``cache_root/<key>/``; the key hashes the requirement lines, those package sources and this
interpreter (and the ``pyproject.toml`` of local sources), so an unchanged project reuses the
environment.
"""

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from importlib.metadata import PackageNotFoundError, distribution
from pathlib import Path
from urllib.parse import unquote, urlsplit

from kinetic_protocol.errors import ConfigError
from kinetic_protocol.requirements import discover_requirements
from kinetic_runtime.private_files import make_private_dirs

__all__ = ["RUNTIME_DISTRIBUTIONS", "ensure_isolated_env", "find_uv", "runtime_install_specs"]

RUNTIME_DISTRIBUTIONS = ("kinetic-protocol", "kinetic-runtime", "cloudpickle", "msgspec")
_COMPLETE_MARKER = ".kinetic-env-complete"
_TAIL_LINES = 30


def find_uv() -> str:
    """The ``uv`` executable: on ``PATH``, else from the ``uv`` Python package."""
    found = shutil.which("uv")
    if found:
        return found
    try:
        from uv import find_uv_bin  # type: ignore[import-not-found, unused-ignore]
    except ImportError:
        pass
    else:
        return str(find_uv_bin())
    raise ConfigError(
        "Isolated environments need uv, which was not found on PATH. Install it "
        "(`pip install uv` or https://docs.astral.sh/uv/), or run without isolate=True."
    )


def runtime_install_specs() -> list[str]:
    """How to install each runtime distribution so it matches this environment."""
    specs: list[str] = []
    for name in RUNTIME_DISTRIBUTIONS:
        try:
            dist = distribution(name)
        except PackageNotFoundError as exc:
            raise ConfigError(
                f"{name} is not installed in this environment, so it cannot be copied into "
                "an isolated one. Reinstall kinetic."
            ) from exc
        local = _local_source(dist.read_text("direct_url.json"))
        specs.append(local if local else f"{name}=={dist.version}")
    return specs


def _local_source(direct_url: str | None) -> str | None:
    """The local directory a distribution was installed from, if any (PEP 610)."""
    if not direct_url:
        return None
    try:
        info = json.loads(direct_url)
    except json.JSONDecodeError:
        return None
    url = info.get("url", "") if isinstance(info, dict) else ""
    if not url.startswith("file://") or "dir_info" not in info:
        return None
    path = unquote(urlsplit(url).path)
    return path if Path(path).is_dir() else None


def _key(lines: list[str], specs: list[str]) -> str:
    # A local source is installed editable, so its code is always current; its metadata
    # (dependencies) is read at install time, so a change to it must give a new env.
    runtime = [
        [spec, hashlib.sha256(Path(spec, "pyproject.toml").read_bytes()).hexdigest()]
        if Path(spec, "pyproject.toml").is_file()
        else [spec, ""]
        for spec in specs
    ]
    material = {
        "format": 1,
        "requirements": lines,
        "runtime": runtime,
        "python": sys.version,
        "interpreter": os.path.realpath(sys.executable),
    }
    return hashlib.sha256(json.dumps(material, sort_keys=True).encode()).hexdigest()[:24]


def _python_in(venv: Path) -> Path:
    if os.name == "nt":  # pragma: no cover - kinetic targets POSIX, kept for clarity
        return venv / "Scripts" / "python.exe"
    return venv / "bin" / "python"


def _run_uv(args: list[str], *, what: str, cwd: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "UV_PROJECT")}
    proc = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        output = (proc.stdout + proc.stderr).rstrip().splitlines()[-_TAIL_LINES:]
        tail = "\n".join(f"  {line}" for line in output)
        raise ConfigError(
            f"Could not {what} (uv exited with {proc.returncode}):\n{tail}\n"
            "Fix the project's requirements (requirements.txt or pyproject.toml); the same "
            "problem would fail the image build."
        )


def ensure_isolated_env(project_root: Path, *, cache_root: Path) -> Path:
    """The python of a cached venv holding the project's requirements and the runtime.

    Created once per distinct set of inputs; later calls return the cached one at once. The
    venv is built in a temporary directory and renamed into place when complete, so a crash
    or a concurrent creator never leaves a half-built environment in the cache.
    """
    project_root = Path(project_root)
    requirements = discover_requirements(project_root)
    specs = runtime_install_specs()
    cache_root = Path(cache_root)
    final = cache_root / _key(list(requirements.lines), specs)
    if (final / _COMPLETE_MARKER).is_file():
        return _python_in(final)
    uv = find_uv()
    make_private_dirs(cache_root)  # the venvs inside keep uv's modes, behind a 0700 door
    staging = Path(tempfile.mkdtemp(prefix=".building-", dir=cache_root))
    try:
        venv = staging / "venv"
        _run_uv(
            [uv, "venv", "--quiet", "--relocatable", "--python", sys.executable, str(venv)],
            what=f"create a virtual environment in {venv}",
            cwd=project_root,
        )
        install = [uv, "pip", "install", "--python", str(_python_in(venv))]
        if requirements.lines:
            req_file = staging / "requirements.txt"
            req_file.write_text(requirements.file_text(), encoding="utf-8")
            install += ["-r", str(req_file)]
        for spec in specs:
            install += ["-e", spec] if Path(spec).is_dir() else [spec]
        source = requirements.source or "(no requirements found)"
        _run_uv(install, what=f"install the requirements of {source}", cwd=project_root)
        (venv / _COMPLETE_MARKER).write_text("ok\n", encoding="utf-8")
        try:
            venv.rename(final)
        except OSError:
            if not (final / _COMPLETE_MARKER).is_file():  # not a concurrent winner: real error
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return _python_in(final)
