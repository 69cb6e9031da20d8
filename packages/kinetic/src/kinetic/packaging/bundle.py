"""Zip the user's project deterministically so its hash names it in the store.

The same files always give the same bytes (sorted entries, fixed timestamps and modes), so an
unchanged project maps to the same ``bundles/<sha256>.zip`` and is never uploaded twice. Which
files are shipped (ignore files, secrets, built-in rules) is decided in ``ignore``.
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

from kinetic import _log
from kinetic.packaging.ignore import (
    IGNORE_FILE,
    Entry,
    ProjectScan,
    read_regular_file,
    scan_project,
)
from kinetic.settings import BUNDLE_GITIGNORE, BUNDLE_WARN_MB
from kinetic_protocol import ArtifactRef, ConfigError, layout

__all__ = [
    "MAX_BUNDLE_BYTES",
    "CodeBundle",
    "build_bundle",
    "bundle_root",
    "find_project_root",
    "scan",
]

MAX_BUNDLE_BYTES = 256 * 1024 * 1024
_ROOT_MARKERS = ("pyproject.toml", "setup.py", "setup.cfg", ".git", "requirements.txt")
_ZIP_EPOCH = (1980, 1, 1, 0, 0, 0)
_NAMED_SECRETS = 20
"""How many withheld secrets (or other left-out entries) a notice names; ``kinetic bundle
show`` lists them all."""


@dataclass(frozen=True)
class CodeBundle:
    """A zipped project plus where the job should stand inside it."""

    root: Path
    data: bytes
    ref: ArtifactRef
    workdir: str
    sys_path: list[str] = field(default_factory=list)


def bundle_root(source_dir: Path) -> Path:
    """The project root ``build_bundle`` uses for ``source_dir``; never the home directory."""
    root = find_project_root(source_dir)
    if root == Path.home().resolve():
        raise ConfigError(
            f"{source_dir} is not inside a project, so Kinetic would bundle your whole home "
            "directory. Move the script into a project directory (one with a pyproject.toml, "
            "requirements.txt or .git, or simply its own folder)."
        )
    return root


def scan(root: Path, exclude: Iterable[Path] = (), data: Iterable[Path] = ()) -> ProjectScan:
    """What a bundle of ``root`` ships and leaves out, by the ignore files and settings."""
    return scan_project(root, exclude=exclude, data=data, use_gitignore=BUNDLE_GITIGNORE.flag())


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


def _size(n: int) -> str:
    return f"{n / 2**20:.1f} MiB" if n >= 2**20 else f"{n / 1024:.1f} KiB"


def _largest(files: list[Entry], count: int) -> str:
    biggest = sorted(files, key=lambda entry: (-entry.stat.st_size, entry.rel))[:count]
    return ", ".join(f"{entry.rel} ({_size(entry.stat.st_size)})" for entry in biggest)


def _named(items: list[str]) -> str:
    more = len(items) - _NAMED_SECRETS
    return ", ".join(items[:_NAMED_SECRETS]) + (f" and {more} more" if more > 0 else "")


def _say_what_was_left_out(scan: ProjectScan) -> None:
    """One notice each for withheld secrets, entries that are not files, and a bundle past the
    warning size."""
    secrets = scan.withheld_secrets
    if secrets:
        shown = _named(secrets)
        _log.notice(
            f"bundle-secrets:{scan.root}:{shown}",
            f"kinetic: left likely secrets out of the code bundle of {scan.root}: {shown}. "
            "Secrets are never bundled (not even when .kineticignore re-includes them); "
            "give the job what it needs another way.",
        )
    not_files = scan.not_files
    if not_files:
        shown = _named([f"{item.rel} ({item.rule})" for item in not_files])
        _log.notice(
            f"bundle-not-files:{scan.root}:{shown}",
            f"kinetic: left entries that are not regular files out of the code bundle of "
            f"{scan.root}: {shown}. `kinetic bundle show` lists everything left out.",
        )
    warn_mb = BUNDLE_WARN_MB.number() or 0
    total = scan.total_bytes
    if warn_mb > 0 and total > warn_mb * 2**20:
        _log.notice(
            f"bundle-size:{scan.root}",
            f"kinetic: the code bundle of {scan.root} holds {_size(total)} of files (warning "
            f"past {warn_mb:g} MiB, {BUNDLE_WARN_MB.env}). Largest: {_largest(scan.files, 5)}. "
            f"List data in {IGNORE_FILE} and pass it with kinetic.Data instead; "
            "`kinetic bundle show` lists what is shipped.",
        )


def _zip(root: Path, files: list[Entry]) -> bytes:
    total = sum(entry.stat.st_size for entry in files)
    if total > MAX_BUNDLE_BYTES:
        raise ConfigError(
            f"The project at {root} holds {total // 2**20} MiB of files, over the "
            f"{MAX_BUNDLE_BYTES // 2**20} MiB code bundle limit. Largest: "
            f"{_largest(files, 3)}. List data in {IGNORE_FILE} (or move it out of the project "
            "directory) and pass it with kinetic.Data instead."
        )
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=1) as zf:
        for rel, path, _ in files:
            data = read_regular_file(path)
            if data is None:
                raise ConfigError(
                    f"{path} changed while its project was being bundled: it is gone or no "
                    "longer a regular file. Submit again once the project stops changing."
                )
            info = zipfile.ZipInfo(rel, date_time=_ZIP_EPOCH)
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, data)
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
    source_dir: Path,
    *,
    cwd: Path | None = None,
    exclude: Iterable[Path] = (),
    data_paths: Iterable[Path] = (),
) -> CodeBundle:
    """Bundle the project around ``source_dir``; unchanged files reuse the last bundle.

    ``exclude`` names directories to leave out wherever they are (Kinetic's home and store,
    when they sit inside the project), ``data_paths`` the local ``kinetic.Data`` of the call, which
    travel on their own. What else is left out is decided by ``ignore``: built-in rules,
    secrets, ``.kineticignore`` and ``.gitignore``.
    """
    root = bundle_root(source_dir)
    cwd = (cwd or Path.cwd()).resolve()
    scanned = scan(root, exclude, data_paths)
    _say_what_was_left_out(scanned)
    files = scanned.files
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
