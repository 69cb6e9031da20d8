"""The benchmarks' workload, written into a small project of its own.

Kinetic ships the caller's project with every job; from inside this repository that would be
the whole repository, and the benchmarks would measure unpacking it. ``small_project()``
builds a one-module project instead (``--in-repo`` measures the other case).
"""

import os
import sys
import tempfile
import textwrap
from pathlib import Path
from types import ModuleType

__all__ = ["small_project"]

_SOURCE = '''
def noop():
    """Nothing: what is measured is the runner's own overhead."""


def square(x):
    return x * x
'''


def small_project(in_repo: bool = False) -> ModuleType:
    """Import the workload module from a fresh one-module project (or from this repository)."""
    root = Path(__file__).parent if in_repo else Path(tempfile.mkdtemp(prefix="kinetic-work-"))
    if not in_repo:
        (root / "pyproject.toml").write_text('[project]\nname = "bench-work"\nversion = "0"\n')
        (root / "benchwork.py").write_text(textwrap.dedent(_SOURCE))
    else:
        (root / "benchwork.py").write_text(textwrap.dedent(_SOURCE))
    sys.path.insert(0, str(root))
    os.environ["PYTHONPATH"] = os.pathsep.join(
        filter(None, [str(root), os.environ.get("PYTHONPATH")])
    )
    import benchwork

    return benchwork
