"""Where the benchmarks' workload (``benchwork``) is imported from.

Kinetic ships the caller's project with every job; from inside this repository that would be
the whole repository, and the benchmarks would measure unpacking it. ``small_project()``
copies ``benchwork.py`` into a one-module project instead; ``in_repo=True`` imports it from
this repository (tracked, so its code bundle ships it), to measure that case.

Nothing here sets ``PYTHONPATH``: a job must find the module in its own code bundle, as on a
cluster (the local launcher would otherwise inherit the path and hide a bundle without it).
"""

import shutil
import sys
import tempfile
from pathlib import Path
from types import ModuleType

__all__ = ["small_project"]

_HERE = Path(__file__).parent


def small_project(in_repo: bool = False) -> ModuleType:
    """Import ``benchwork`` from a fresh one-module project (or from this repository)."""
    if in_repo:
        root = _HERE
    else:
        root = Path(tempfile.mkdtemp(prefix="kinetic-work-"))
        (root / "pyproject.toml").write_text('[project]\nname = "bench-work"\nversion = "0"\n')
        shutil.copyfile(_HERE / "benchwork.py", root / "benchwork.py")
    sys.path.insert(0, str(root))
    import benchwork

    assert Path(benchwork.__file__).parent == root, benchwork.__file__
    return benchwork
