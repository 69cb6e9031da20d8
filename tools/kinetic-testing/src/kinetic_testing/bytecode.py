"""Compile the workspace's own packages to bytecode before the suite starts its processes.

Every local job, supervisor, pod and helper script the suite starts is a fresh interpreter
that imports ``kinetic_runtime``, ``kinetic_protocol`` and often ``kinetic``. Where
``PYTHONDONTWRITEBYTECODE`` is set (as on the shared test machines), no interpreter leaves a
``.pyc`` behind, so each of them compiles those modules again. ``compileall`` writes the
bytecode whatever that variable says, once, and skips what is already up to date. (The
installed third-party packages are compiled by ``uv sync``: ``compile-bytecode`` in the
workspace's ``pyproject.toml``.)
"""

import compileall
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
    """Write missing or stale bytecode for the workspace's packages under ``root``."""
    for relative in SOURCE_DIRS:
        directory = root / relative
        if directory.is_dir():
            compileall.compile_dir(directory, quiet=2)
