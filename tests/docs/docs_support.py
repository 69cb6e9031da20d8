"""Helpers of the documentation tests: building the site, and the guides' examples as scripts.

A page's ```python blocks run in order as one script (later blocks use what earlier ones
defined), unless a block's first line is ``# not run: <why>``: those need a cloud project.
The build strips that line (``tools/docs/hooks.py``), so readers never see it.

A line whose comment starts with ``# → `` says what it prints: the script's output must show
that text, as its own line, in the order the page does.
"""

import os
import re
import subprocess
import sys
from pathlib import Path

__all__ = [
    "CODE_WIDTH",
    "DOCS",
    "GUIDES",
    "NOT_RUN",
    "PRINTS",
    "ROOT",
    "build_site",
    "code_blocks",
    "expected_output",
    "python_blocks",
    "script_of",
]

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
GUIDES = sorted(
    path
    for path in DOCS.rglob("*.md")
    if path.parent.name == "guides" or path.name in ("index.md", "getting-started.md")
)
NOT_RUN = "# not run:"
NEEDS_TORCH = f"{NOT_RUN} needs PyTorch"
"""A block the page's script leaves out, as the workspace has no PyTorch: ``test_examples``
runs each one as a script of its own, in a client whose Python has Debian's PyTorch."""
PRINTS = "# → "
CODE_WIDTH = 80
"""Characters a code block shows without scrolling sideways: the content column of the site's
theme holds about 84 monospace characters, less the block's padding (at a 1440 px window,
measured in Chromium; ``test_browser.py`` checks the pages themselves)."""
_BLOCK = re.compile(r"^```python\n(.*?)^```", re.DOTALL | re.MULTILINE)
_ANY_BLOCK = re.compile(r"^ *```[^\n]*\n(.*?)^ *```", re.DOTALL | re.MULTILINE)
"""Any fenced block, also one indented in a list (its indent counts against the width)."""


def python_blocks(page: Path) -> list[str]:
    return _BLOCK.findall(page.read_text())


def code_blocks(page: Path) -> list[str]:
    """Every fenced block of ``page``, as a reader sees it (without the ``# not run`` line)."""
    return [
        block.split("\n", 1)[1] if block.lstrip(" ").startswith(NOT_RUN) else block
        for block in _ANY_BLOCK.findall(page.read_text())
    ]


def expected_output(script: str) -> list[str]:
    """What the ``# → `` comments of ``script`` say it prints, in order."""
    return [line.split(PRINTS, 1)[1].rstrip() for line in script.splitlines() if PRINTS in line]


def script_of(page: Path) -> str:
    """The page's runnable blocks as one script; empty if every block is ``# not run``."""
    runnable = [block for block in python_blocks(page) if not block.startswith(NOT_RUN)]
    return "\n\n".join(runnable)


def torch_blocks(page: Path) -> list[str]:
    """The page's blocks that need PyTorch (see :data:`NEEDS_TORCH`)."""
    return [block for block in python_blocks(page) if block.startswith(NEEDS_TORCH)]


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
