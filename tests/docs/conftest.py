"""The documentation site, built once per test session in strict mode."""

import sys
from pathlib import Path

import pytest

# The helpers are imported by their plain name, like the scenario suite's.
sys.path.insert(0, str(Path(__file__).resolve().parent))

from docs_support import ROOT, build_site


@pytest.fixture(scope="session")
def built_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site as ``mkdocs build --strict`` writes it; a failed build fails every user."""
    site = tmp_path_factory.mktemp("site")
    built = build_site(ROOT / "mkdocs.yml", site)
    assert built.returncode == 0, f"mkdocs build --strict failed:\n{built.stderr}"
    return site
