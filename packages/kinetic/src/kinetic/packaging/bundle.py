"""Zip the user's project deterministically so its hash names it in the store.

The same files always give the same bytes (sorted entries, fixed timestamps and modes), so an
unchanged project maps to the same ``bundles/<sha256>.zip`` and is never uploaded twice.
"""

import hashlib
import io
import os
import sys
import threading
import zipfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from kinetic_protocol import ArtifactRef, ConfigError, layout

__all__ = ["MAX_BUNDLE_BYTES", "CodeBundle", "build_bundle", "find_project_root"]

MAX_BUNDLE_BYTES = 256 * 1024 * 1024
_ROOT_MARKERS = ("pyproject.toml", "setup.py", "setup.cfg", ".git", "requirements.txt")
_SKIP_DIRS = frozenset({"__pycache__", "venv", "node_modules", "dist", "build"})
"""Besides these, every hidden directory (``.git``, ``.venv``, ``.ssh``...) is left out."""
_SKIP_SUFFIXES = (".pyc", ".pyo", ".egg-info")
_ZIP_EPOCH = (1980, 1, 1, 0, 0, 0)


@dataclass(frozen=True)
class CodeBundle:
    """A zipped project plus where the job should stand inside it."""

    root: Path
    data: bytes
    ref: ArtifactRef
    workdir: str
    sys_path: list[str] = field(default_factory=list)


def find_project_root(start: Path) -> Path:
    """The nearest ancestor of ``start`` that looks like a project, else ``start`` itself."""
    start = start.resolve()
    home = Path.home().resolve()
    for candidate in (start, *start.parents):
        if candidate in (home, candidate.parent):
            break
        if any((candidate / marker).exists() for marker in _ROOT_MARKERS):
            return candidate
    return start


def _keep_dir(directory: str, name: str, excluded: frozenset[Path]) -> bool:
    """Hidden directories (``.ssh``, ``.git``, ``.venv``...) and Kinetic's own state stay out."""
    if name.startswith(".") or name in _SKIP_DIRS or name.endswith(_SKIP_SUFFIXES):
        return False
    return not excluded or Path(directory, name).resolve() not in excluded


def _project_files(
    root: Path, excluded: frozenset[Path] = frozenset()
) -> list[tuple[str, Path, os.stat_result]]:
    found = []
    for directory, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if _keep_dir(directory, d, excluded))
        for name in filenames:
            if name.endswith(_SKIP_SUFFIXES):
                continue
            path = Path(directory, name)
            try:
                stat = path.stat()
            except OSError:  # a dangling symlink or a file removed while we walk
                continue
            found.append((path.relative_to(root).as_posix(), path, stat))
    found.sort(key=lambda item: item[0])
    return found


def _zip(root: Path, files: list[tuple[str, Path, os.stat_result]]) -> bytes:
    total = sum(stat.st_size for _, _, stat in files)
    if total > MAX_BUNDLE_BYTES:
        biggest = sorted(files, key=lambda item: -item[2].st_size)[:3]
        names = ", ".join(f"{rel} ({stat.st_size // 2**20} MiB)" for rel, _, stat in biggest)
        raise ConfigError(
            f"The project at {root} holds {total // 2**20} MiB of files, over the "
            f"{MAX_BUNDLE_BYTES // 2**20} MiB code bundle limit. Largest: {names}. Move data "
            "out of the project directory and pass it with kinetic.Data instead."
        )
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=1) as zf:
        for rel, path, _ in files:
            info = zipfile.ZipInfo(rel, date_time=_ZIP_EPOCH)
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, path.read_bytes())
    return buffer.getvalue()


def _relative_entries(root: Path, paths: list[str]) -> list[str]:
    entries: list[str] = []
    for raw in paths:
        path = Path(raw or os.getcwd()).resolve()
        if path.is_relative_to(root) and "site-packages" not in path.parts:
            rel = path.relative_to(root).as_posix()
            if rel not in entries:
                entries.append(rel)
    return entries


_cache_lock = threading.Lock()
_cache: dict[Path, tuple[tuple[tuple[str, int, int], ...], bytes, str]] = {}


def build_bundle(
    source_dir: Path, *, cwd: Path | None = None, exclude: Iterable[Path] = ()
) -> CodeBundle:
    """Bundle the project around ``source_dir``; unchanged files reuse the last bundle.

    ``exclude`` names directories to leave out wherever they are (Kinetic's home and store,
    when they sit inside the project).
    """
    root = find_project_root(source_dir)
    if root == Path.home().resolve():
        raise ConfigError(
            f"{source_dir} is not inside a project, so Kinetic would bundle your whole home "
            "directory. Move the script into a project directory (one with a pyproject.toml, "
            "requirements.txt or .git, or simply its own folder)."
        )
    cwd = (cwd or Path.cwd()).resolve()
    files = _project_files(root, frozenset(path.resolve() for path in exclude))
    signature = tuple((rel, stat.st_size, stat.st_mtime_ns) for rel, _, stat in files)
    with _cache_lock:
        cached = _cache.get(root)
    if cached and cached[0] == signature:
        data, digest = cached[1], cached[2]
    else:
        data = _zip(root, files)
        digest = hashlib.sha256(data).hexdigest()
        with _cache_lock:
            _cache[root] = (signature, data, digest)
    sys_path = _relative_entries(root, [*sys.path, str(source_dir)])
    if "." not in sys_path:
        sys_path.append(".")
    return CodeBundle(
        root=root,
        data=data,
        ref=ArtifactRef(key=layout.bundle_key(digest), sha256=digest, size=len(data)),
        workdir=cwd.relative_to(root).as_posix() if cwd.is_relative_to(root) else ".",
        sys_path=sys_path,
    )
