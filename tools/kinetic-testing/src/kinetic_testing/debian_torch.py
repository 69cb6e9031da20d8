"""PyTorch for the tests that run a real PyTorch program, from Debian's ``python3-torch``.

PyTorch's PyPI wheel for Linux brings gigabytes of CUDA libraries, so the workspace does not
install it. Debian's package is a CPU build with gloo for Debian's own Python 3.11, built
against Debian's NumPy 1.x (the workspace has NumPy 2): a test gets a venv of that Python which
sees its system packages, with Kinetic's packages added as the lock pins them, and leaves the
workspace's venv as it is. ``.ci/run`` installs the package; elsewhere the tests skip with
:data:`SKIP_REASON`.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

__all__ = ["DEBIAN_PYTHON", "DEBIAN_TORCH", "SKIP_REASON", "available", "torch_venv"]

DEBIAN_PYTHON = Path("/usr/bin/python3.11")
DEBIAN_TORCH = Path("/usr/lib/python3/dist-packages/torch")
SKIP_REASON = (
    "needs Debian's PyTorch (a CPU build with gloo) for /usr/bin/python3.11: "
    "apt-get install python3-torch"
)
_ROOT = next(p for p in Path(__file__).resolve().parents if (p / "uv.lock").is_file())
"""The workspace root (this package is installed from it, editable), whose lock pins what the
venv gets."""


def available() -> bool:
    return DEBIAN_PYTHON.exists() and (DEBIAN_TORCH / "distributed" / "__init__.py").exists()


def _uv() -> list[str]:
    found = shutil.which("uv")
    return [found] if found else [sys.executable, "-m", "uv"]


def torch_venv(venv: Path, *, package: str, extras: Sequence[str] = ()) -> Path:
    """The interpreter of a new venv at ``venv``: Debian's Python with its system packages
    (torch among them), and ``package`` of this workspace with its locked dependencies
    (``kinetic-runtime`` for a job's interpreter, ``kinetic`` for a client's) and those of
    its ``extras`` (``gcs`` for a pod's runtime, which reads its job from the bucket)."""
    uv = _uv()
    subprocess.run(
        [*uv, "venv", "-q", "--system-site-packages", "--python", str(DEBIAN_PYTHON), str(venv)],
        check=True,
    )
    export = [*uv, "export", "-q", "--frozen", "--no-dev", "--no-hashes", "--package", package]
    pins = subprocess.run(
        [*export, *(f"--extra={extra}" for extra in extras)],
        cwd=_ROOT,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    python = venv / "bin" / "python"
    subprocess.run(
        [*uv, "pip", "install", "-q", "--python", str(python), "-r", "-"],
        cwd=_ROOT,
        input=pins,
        check=True,
        text=True,
    )
    return python
