"""Every ``python`` example of the guides runs, as written, on the local backend: a broken
example fails here before a reader finds it."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from docs_support import (
    CODE_WIDTH,
    DOCS,
    GUIDES,
    NOT_RUN,
    code_blocks,
    expected_output,
    python_blocks,
    script_of,
    torch_blocks,
)

from kinetic_testing import debian_torch

RUN_ON_LOCAL = {
    "getting-started.md",
    "guides/detached-jobs.md",
    "guides/batches.md",
    "guides/queues.md",
    "guides/capacity.md",
    "guides/data.md",
    "guides/tpu.md",
    "guides/multi-node.md",
}
"""Guides whose examples run here; the others show GKE-only code, each block marked why."""


@pytest.mark.parametrize("page", GUIDES, ids=lambda page: str(page.relative_to(DOCS)))
def test_the_guide_examples_run_on_the_local_backend(
    page: Path, tmp_path: Path, clean_kinetic_env: Path
) -> None:
    name = str(page.relative_to(DOCS))
    script = script_of(page)
    blocks = python_blocks(page)
    assert all(block.startswith(NOT_RUN) or script for block in blocks)
    if name not in RUN_ON_LOCAL:
        assert not script, f"{name} has runnable examples: add it to RUN_ON_LOCAL"
        assert all(b.split("\n", 1)[0].removeprefix(NOT_RUN).strip() for b in blocks), (
            "every block that is not run says why"
        )
        return
    assert script, f"{name} should show runnable examples"
    # A project of its own: the bundle is the example and nothing else.
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "docs-example"\nversion = "0"\n')
    (tmp_path / "example.py").write_text(script)
    ran = subprocess.run(
        [sys.executable, "example.py"],
        cwd=tmp_path,
        env={**os.environ, "KINETIC_BACKEND": "local"},
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert ran.returncode == 0, f"{name}'s examples failed:\n{ran.stdout}\n{ran.stderr}"
    _assert_prints_in_order(ran.stdout, expected_output(script), name)


@pytest.fixture(scope="module")
def torch_client(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A Python with Debian's PyTorch and this checkout's Kinetic: a user's own interpreter,
    in which the local backend runs the jobs too."""
    venv = tmp_path_factory.mktemp("torch-client") / "venv"
    return debian_torch.torch_venv(venv, package="kinetic")


@pytest.mark.slow
@pytest.mark.skipif(not debian_torch.available(), reason=debian_torch.SKIP_REASON)
def test_the_guides_pytorch_examples_run_on_the_local_backend(
    torch_client: Path, tmp_path: Path, clean_kinetic_env: Path
) -> None:
    examples = [(page, block) for page in GUIDES for block in torch_blocks(page)]
    assert examples, "a guide shows a PyTorch program"
    for number, (page, block) in enumerate(examples):
        name = f"{page.relative_to(DOCS)} (PyTorch example {number})"
        project = tmp_path / f"example-{number}"
        project.mkdir()
        (project / "pyproject.toml").write_text('[project]\nname = "docs-example"\nversion = "0"\n')
        (project / "example.py").write_text(block)
        ran = subprocess.run(
            [str(torch_client), "example.py"],
            cwd=project,
            env={**os.environ, "KINETIC_BACKEND": "local"},
            capture_output=True,
            text=True,
            timeout=180,
            check=False,
        )
        assert ran.returncode == 0, f"{name} failed:\n{ran.stdout}\n{ran.stderr}"
        _assert_prints_in_order(ran.stdout, expected_output(block), name)


def _assert_prints_in_order(stdout: str, expected: list[str], name: str) -> None:
    """Each ``# → `` line of the page is a line of the output, in the page's order."""
    lines = [line.rstrip() for line in stdout.splitlines()]
    at = 0
    for want in expected:
        try:
            at = lines.index(want, at) + 1
        except ValueError:
            shown = "\n".join(lines[at:])
            raise AssertionError(
                f"{name} says a line prints {want!r}; after the lines matched so far, the "
                f"script printed:\n{shown}"
            ) from None


@pytest.mark.parametrize("page", GUIDES, ids=lambda page: str(page.relative_to(DOCS)))
def test_code_blocks_fit_the_width_of_the_page(page: Path) -> None:
    """A longer line scrolls sideways: the end of its comment hides off the block's edge."""
    too_wide = [
        f"{len(line)}: {line}"
        for block in code_blocks(page)
        for line in block.splitlines()
        if len(line) > CODE_WIDTH
    ]
    assert not too_wide, f"lines wider than {CODE_WIDTH} characters:\n" + "\n".join(too_wide)


def test_the_quickstart_shows_what_it_says(tmp_path: Path, clean_kinetic_env: Path) -> None:
    """The README's first command: its log block holds the function's last two lines, then
    Kinetic's own line on how the run ended, as the script's comment says."""
    ran = subprocess.run(
        [sys.executable, str(DOCS.parent / "examples" / "quickstart.py")],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert ran.returncode == 0, f"{ran.stdout}\n{ran.stderr}"
    lines = ran.stdout.splitlines()
    start = lines.index("the last 3 lines of its log:") + 1
    shown = [line.removeprefix("  | ") for line in lines[start : start + 3]]
    assert shown[:2] == ["step 3: loss=0.6561", "step 4: loss=0.5905"], ran.stdout
    assert re.fullmatch(r"\[kinetic\] job train-\S+: succeeded in [\d.]+s", shown[2]), ran.stdout
    assert lines[start + 3].startswith("result: {'lr': 0.1, 'final_loss': 0.5905")
    assert lines[-2:] == ["sweep losses: [0.951, 0.7738, 0.5905, 0.3277]", "done"]
