"""Helpers of the documentation tests: building the site, and the guides' examples as scripts.

A page's ```python blocks run in order as one script (later blocks use what earlier ones
defined), unless a block's first line is ``# not run: <why>``: those need a cloud project.
"""

import os
import re
import subprocess
import sys
from pathlib import Path

__all__ = ["DOCS", "GUIDES", "NOT_RUN", "ROOT", "build_site", "python_blocks", "script_of"]

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
GUIDES = sorted(
    path
    for path in DOCS.rglob("*.md")
    if path.parent.name == "guides" or path.name in ("index.md", "getting-started.md")
)
NOT_RUN = "# not run:"
_BLOCK = re.compile(r"^```python\n(.*?)^```", re.DOTALL | re.MULTILINE)


def python_blocks(page: Path) -> list[str]:
    return _BLOCK.findall(page.read_text())


def script_of(page: Path) -> str:
    """The page's runnable blocks as one script; empty if every block is ``# not run``."""
    runnable = [block for block in python_blocks(page) if not block.startswith(NOT_RUN)]
    return "\n\n".join(runnable)


def build_site(config: Path, site: Path) -> "subprocess.CompletedProcess[str]":
    """``mkdocs build --strict`` of ``config`` into ``site``, in a fresh interpreter."""
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(config), "-d", str(site)],
        cwd=config.parent,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
