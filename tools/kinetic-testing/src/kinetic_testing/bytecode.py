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

import compileall
import sysconfig
from pathlib import Path

__all__ = ["SOURCE_DIRS", "precompile_workspace"]

SOURCE_DIRS = (
    "packages/kinetic-protocol/src",
    "packages/kinetic-runtime/src",
    "packages/kinetic/src",
    "packages/kinetic-gke/src",
    "packages/kinetic-pathways/src",
    "tools/kinetic-testing/src",
)
"""The workspace's importable code, relative to its root (the editable installs)."""


def precompile_workspace(root: Path) -> None:
    """Write missing or stale bytecode for the workspace's packages under ``root`` and for the
    packages installed in this environment."""
    installed = {sysconfig.get_paths()[kind] for kind in ("purelib", "platlib")}
    for directory in [*(root / relative for relative in SOURCE_DIRS), *map(Path, installed)]:
        if directory.is_dir():
            # One process: a worker pool took 14 s just to check an up-to-date environment.
            compileall.compile_dir(directory, quiet=2)
