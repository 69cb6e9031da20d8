"""Which project files go into a code bundle, and why each of the others does not.

A file or directory is left out, in this order of precedence, as:

``default``
    Kinetic's built-in rules: every hidden directory (``.git``, ``.venv``...), caches,
    virtualenvs and build output.
``kinetic-state``
    Kinetic's own home and store, when they sit inside the project.
``data``
    Files and directories the call passes as local ``kinetic.Data``: they travel on their
    own (content-addressed, uploaded once), not inside every code bundle.
``secret``
    An obvious credential (``SECRET_PATTERNS``: ``.env``, ``*.pem``, ``credentials.json``...).
    Secrets are never bundled: a ``!`` negation in ``.kineticignore`` does not bring one back.
``ignored``
    A pattern of the root ``.kineticignore``, else of a ``.gitignore`` (the root's and nested
    ones, each relative to its own directory, the deepest deciding). ``.kineticignore`` is
    consulted first, so ``!pattern`` there re-includes something ``.gitignore`` leaves out.
    ``KINETIC_BUNDLE_GITIGNORE=0`` stops honouring ``.gitignore``.
``not-a-file``
    Anything that is not a regular file once links are followed: a Unix socket, a named pipe,
    a device, a link that leads nowhere. Such an entry is never opened (opening a named pipe
    waits for a writer for ever; a socket cannot be opened at all).

Matching uses ``pathspec`` (``GitIgnoreSpec``) rather than hand-written code: gitignore
semantics (anchoring, ``**``, directory-only patterns, negation, last match wins) have many
edge cases, and pathspec is the maintained implementation of exactly them. It is imported
inside ``scan_project``: it costs tens of milliseconds, which ``import kinetic`` should not pay.
"""

from __future__ import annotations

import functools
import os
import stat as stat_module
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal, NamedTuple

if TYPE_CHECKING:
    from pathspec import GitIgnoreSpec

__all__ = [
    "IGNORE_FILE",
    "SECRET_PATTERNS",
    "Entry",
    "Excluded",
    "ProjectScan",
    "Reason",
    "read_regular_file",
    "scan_project",
]

IGNORE_FILE = ".kineticignore"
SECRET_PATTERNS: tuple[str, ...] = (
    ".env",
    ".env.*",
    "*.pem",
    "*.key",
    "*.p12",
    "*.pfx",
    "id_rsa",
    "id_ecdsa",
    "id_ed25519",
    "credentials.json",
    "*-credentials.json",
    "service-account*.json",
    "application_default_credentials.json",
    ".netrc",
    ".pypirc",
    ".ssh/",
    ".aws/",
    "**/.config/gcloud/",
    "**/.docker/config.json",
)
"""Gitignore patterns of files that are never bundled, wherever they are in the project."""

_SKIP_DIRS = frozenset({"__pycache__", "venv", "node_modules", "dist", "build"})
"""Besides these, every hidden directory (``.git``, ``.venv``, ``.ssh``...) is left out."""
_SKIP_SUFFIXES = (".pyc", ".pyo", ".egg-info")

Reason = Literal["default", "kinetic-state", "data", "secret", "ignored", "not-a-file"]


class Entry(NamedTuple):
    """One file to ship: its path in the bundle, on disk, and its stat."""

    rel: str
    path: Path
    stat: os.stat_result


@dataclass(frozen=True)
class Excluded:
    """A file, or a whole directory (``rel`` ends with ``/``), left out of the bundle."""

    rel: str
    reason: Reason
    rule: str
    """What decided: ``hidden directory``, ``.gitignore: *.log``, ``secret: *.pem``..."""
    would_ship: bool = False
    """For a secret: whether it would have been shipped without the secret rules."""


@dataclass(frozen=True)
class ProjectScan:
    """What a bundle of ``root`` holds (sorted by path) and what it leaves out."""

    root: Path
    files: list[Entry]
    excluded: list[Excluded] = field(default_factory=list)

    @property
    def total_bytes(self) -> int:
        return sum(entry.stat.st_size for entry in self.files)

    @property
    def withheld_secrets(self) -> list[str]:
        """Secrets left out that nothing else (built-in rules, ignore files) left out."""
        return [item.rel for item in self.excluded if item.reason == "secret" and item.would_ship]

    @property
    def not_files(self) -> list[Excluded]:
        """Sockets, named pipes, devices and dangling links that would otherwise have shipped."""
        return [item for item in self.excluded if item.reason == "not-a-file"]


_KINDS = (
    (stat_module.S_ISSOCK, "a socket"),
    (stat_module.S_ISFIFO, "a named pipe"),
    (stat_module.S_ISCHR, "a character device"),
    (stat_module.S_ISBLK, "a block device"),
    (stat_module.S_ISDIR, "a directory"),
)


def _kind(mode: int) -> str:
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def read_regular_file(path: Path) -> bytes | None:
    """``path``'s bytes if it is a regular file (links followed), else None.

    The file is opened without blocking and checked on the open descriptor, so a named pipe
    put in its place after a scan is never waited on, and a socket is never read.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None
    with os.fdopen(fd, "rb") as file:
        if not stat_module.S_ISREG(os.fstat(fd).st_mode):
            return None
        return file.read()


def _default_rule(name: str, is_dir: bool) -> str | None:
    if name.endswith(_SKIP_SUFFIXES):
        return f"built-in: *{Path(name).suffix}"
    if is_dir and name.startswith("."):
        return "built-in: hidden directory"
    if is_dir and name in _SKIP_DIRS:
        return f"built-in: {name}/"
    return None


_DECISIONS_KEPT = 200_000
"""How many paths a compiled ignore file remembers its decision for before it starts over."""


class _Matcher:
    """One ignore file's compiled patterns, with what they decided for each path asked: every
    submission scans the whole project again, and its paths get the same answers until the
    file changes (then its text compiles to another matcher). Matching was half a scan."""

    def __init__(self, spec: GitIgnoreSpec) -> None:
        self._spec = spec
        self._decided: dict[str, tuple[bool, str] | None] = {}

    def decide(self, rel: str) -> tuple[bool, str] | None:
        """(ignored?, the deciding pattern) if a pattern matches ``rel``, else None."""
        try:
            return self._decided[rel]
        except KeyError:
            pass
        result = self._spec.check_file(rel)
        decided = None
        if result.include is not None and result.index is not None:
            pattern = getattr(self._spec.patterns[result.index], "pattern", None) or "?"
            decided = result.include, str(pattern)
        if len(self._decided) >= _DECISIONS_KEPT:
            self._decided.clear()
        self._decided[rel] = decided
        return decided


@functools.lru_cache(maxsize=64)
def _matcher(text: str) -> _Matcher:
    """The matcher of an ignore file's ``text``, compiled once per text."""
    from pathspec import GitIgnoreSpec

    return _Matcher(GitIgnoreSpec.from_lines(text.splitlines()))


class _Rules:
    """The secret patterns, ``.kineticignore`` and the ``.gitignore`` files met while walking."""

    def __init__(self, root: Path, use_gitignore: bool) -> None:
        self._secrets = _matcher("\n".join(SECRET_PATTERNS))
        self._kinetic = self._load(root / IGNORE_FILE)
        self._use_gitignore = use_gitignore
        self._gitignores: list[tuple[str, _Matcher]] = []  # (directory prefix, matcher)

    def _load(self, path: Path) -> _Matcher | None:
        data = read_regular_file(path)
        if data is None:
            return None
        return _matcher(data.decode("utf-8", errors="replace"))

    def enter(self, rel_dir: str, directory: Path, filenames: Sequence[str]) -> None:
        """Pick up ``directory``'s own ``.gitignore`` (``rel_dir`` is "" or ends with "/")."""
        if self._use_gitignore and ".gitignore" in filenames:
            matcher = self._load(directory / ".gitignore")
            if matcher is not None:
                self._gitignores.append((rel_dir, matcher))
                self._gitignores.sort(key=lambda item: -len(item[0]))  # deepest first

    def _ignored_by(self, rel: str) -> str | None:
        """The ignore file and pattern leaving ``rel`` out, or None if it stays."""
        if self._kinetic is not None:
            decided = self._kinetic.decide(rel)
            if decided is not None:
                return f"{IGNORE_FILE}: {decided[1]}" if decided[0] else None
        for prefix, matcher in self._gitignores:
            if rel.startswith(prefix):
                decided = matcher.decide(rel[len(prefix) :])
                if decided is not None:
                    return f"{prefix}.gitignore: {decided[1]}" if decided[0] else None
        return None

    def classify(self, rel: str, name: str, is_dir: bool) -> Excluded | None:
        """Why ``rel`` (a directory's ends with ``/``) is left out, or None if it is shipped."""
        default = _default_rule(name, is_dir)
        secret = self._secrets.decide(rel)
        if secret is not None and secret[0]:
            would_ship = default is None and self._ignored_by(rel) is None
            return Excluded(rel, "secret", f"secret: {secret[1]}", would_ship)
        if default is not None:
            return Excluded(rel, "default", default)
        ignored = self._ignored_by(rel)
        if ignored is not None:
            return Excluded(rel, "ignored", ignored)
        return None


def _file_entry(path: Path, rel: str) -> Entry | Excluded | None:
    """A file to ship, or why ``path`` is not one (None: it vanished while we walked)."""
    try:
        stat = path.stat()
    except FileNotFoundError:
        if path.is_symlink():
            return Excluded(rel, "not-a-file", "a link that leads nowhere")
        return None
    except OSError as error:
        return Excluded(rel, "not-a-file", f"unreadable: {error.strerror}")
    if not stat_module.S_ISREG(stat.st_mode):
        return Excluded(rel, "not-a-file", _kind(stat.st_mode))
    return Entry(rel, path, stat)


def scan_project(
    root: Path,
    *,
    exclude: Iterable[Path] = (),
    data: Iterable[Path] = (),
    use_gitignore: bool = True,
) -> ProjectScan:
    """Walk ``root`` in a fixed order and sort every entry into shipped or left out (and why).

    ``exclude`` names directories to leave out wherever they are (Kinetic's home and store);
    ``data`` the files and directories the call passes as ``kinetic.Data``, which travel on
    their own. Left-out directories are not descended into, so their files are not listed one
    by one.
    """
    excluded_dirs = frozenset(path.resolve() for path in exclude)
    data_paths = frozenset(path.resolve() for path in data)
    rules = _Rules(root, use_gitignore)
    files: list[Entry] = []
    left_out: list[Excluded] = []
    for directory, dirnames, filenames in os.walk(root):
        here = Path(directory)
        rel_dir = here.relative_to(root).as_posix()
        rel_dir = "" if rel_dir == "." else rel_dir + "/"
        rules.enter(rel_dir, here, filenames)
        kept_dirs = []
        for name in sorted(dirnames):
            rel = f"{rel_dir}{name}/"
            why = rules.classify(rel, name, is_dir=True)
            if why is None and excluded_dirs and (here / name).resolve() in excluded_dirs:
                why = Excluded(rel, "kinetic-state", "Kinetic's home or store")
            if why is None and data_paths and (here / name).resolve() in data_paths:
                why = Excluded(rel, "data", "passed as kinetic.Data")
            if why is None:
                kept_dirs.append(name)
            else:
                left_out.append(why)
        dirnames[:] = kept_dirs
        for name in filenames:
            rel = f"{rel_dir}{name}"
            why = rules.classify(rel, name, is_dir=False)
            if why is None and data_paths and (here / name).resolve() in data_paths:
                why = Excluded(rel, "data", "passed as kinetic.Data")
            if why is not None:
                left_out.append(why)
                continue
            entry = _file_entry(here / name, rel)
            if isinstance(entry, Entry):
                files.append(entry)
            elif entry is not None:
                left_out.append(entry)
    files.sort(key=lambda entry: entry.rel)
    left_out.sort(key=lambda item: item.rel)
    return ProjectScan(root=root, files=files, excluded=left_out)
