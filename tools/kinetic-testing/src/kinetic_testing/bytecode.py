"""Compile what the suite's processes import to bytecode before the suite starts them.

Every local job, supervisor, pod and helper script the suite starts is a fresh interpreter
that imports ``kinetic_runtime``, ``kinetic_protocol``, often ``kinetic``, and the
``kubernetes`` and ``google-cloud-storage`` clients (1.3 s and 0.9 s of CPU to compile). Where
``PYTHONDONTWRITEBYTECODE`` is set (as on the shared test machines), no interpreter leaves a
``.pyc`` behind, so each of them compiles those modules again. ``compileall`` writes the
bytecode whatever that variable says, once per environment, and then only checks it is up to
date. It is done here, by the test session, and not by every ``uv sync`` (``compile-bytecode``
made each install of the workspace compile 14,000 files, tests or not).
"""

import os
import subprocess
import sys
import sysconfig
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = ["SOURCE_DIRS", "precompile_workspace", "shares", "writing_bytecode"]

SOURCE_DIRS = (
    "packages/kinetic-protocol/src",
    "packages/kinetic-runtime/src",
    "packages/kinetic/src",
    "packages/kinetic-gke/src",
    "packages/kinetic-pathways/src",
    "tools/kinetic-testing/src",
)
"""The workspace's importable code, relative to its root (the editable installs)."""

_MAX_PROCESSES = 8


def precompile_workspace(root: Path) -> None:
    """Write missing or stale bytecode for the workspace's packages under ``root`` and for the
    packages installed in this environment.

    A fresh environment is 14,000 files, 30 s of CPU: one ``compileall`` process per CPU, each
    given whole packages (a pool fed file by file took 14 s just to check an up-to-date
    environment; a process per share checks it in under a second).
    """
    installed = {sysconfig.get_paths()[kind] for kind in ("purelib", "platlib")}
    directories = [*(root / relative for relative in SOURCE_DIRS), *map(Path, installed)]
    entries = [
        entry
        for directory in directories
        if directory.is_dir()
        for entry in directory.iterdir()
        if entry.is_dir() or entry.suffix == ".py"
    ]
    processes = min(len(os.sched_getaffinity(0)), _MAX_PROCESSES)
    running = [
        subprocess.Popen([sys.executable, "-m", "compileall", "-qq", *map(str, share)])
        for share in shares(entries, processes)
        if share
    ]
    for process in running:
        process.wait()  # an unreadable file is the failing test's to show, not the session's


@contextmanager
def writing_bytecode() -> Iterator[None]:
    """Let this process write ``.pyc`` files for a while, whatever ``PYTHONDONTWRITEBYTECODE``
    says: pytest keeps a test module's assert-rewritten code only where the interpreter writes
    bytecode, and otherwise rewrites and compiles every test module again in every worker."""
    saved = sys.dont_write_bytecode
    sys.dont_write_bytecode = False
    try:
        yield
    finally:
        sys.dont_write_bytecode = saved


def shares(entries: Iterable[Path], count: int) -> list[list[Path]]:
    """``entries`` split into ``count`` lists of about as many ``.py`` files each (the
    largest package first, to the list with the fewest so far)."""
    sized = sorted(((_python_files(entry), entry) for entry in entries), reverse=True)
    loads = [0] * count
    split: list[list[Path]] = [[] for _ in range(count)]
    for size, entry in sized:
        lightest = loads.index(min(loads))
        loads[lightest] += size
        split[lightest].append(entry)
    return split


def _python_files(entry: Path) -> int:
    if not entry.is_dir():
        return 1
    return sum(name.endswith(".py") for _, _, names in os.walk(entry) for name in names)
