"""The documentation site builds in strict mode, and its generated pages match the code."""

import re
from html import unescape
from pathlib import Path

import click
import yaml
from docs_support import ROOT, build_site

from kinetic.cli import cli
from kinetic.settings import registry


def _text(page: Path) -> str:
    return re.sub(r"\s+", " ", unescape(re.sub(r"<[^>]+>", " ", page.read_text())))


def _nav_pages(nav: list[object]) -> list[str]:
    pages: list[str] = []
    for item in nav:
        value = next(iter(item.values())) if isinstance(item, dict) else item
        pages += _nav_pages(value) if isinstance(value, list) else [str(value)]
    return pages


def test_every_page_is_in_the_nav_and_built(built_site: Path) -> None:
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text().replace("!!python", "#"))
    in_nav = set(_nav_pages(config["nav"]))
    on_disk = {str(p.relative_to(ROOT / "docs")) for p in (ROOT / "docs").rglob("*.md")}
    assert in_nav == on_disk
    for page in in_nav:
        built = page.removesuffix(".md").removesuffix("index")
        assert (built_site / built / "index.html").exists(), page


def _commands(group: click.Group, prefix: str) -> list[str]:
    ctx = click.Context(group)
    found = []
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        assert command is not None
        found.append(f"{prefix} {name}")
        if isinstance(command, click.Group):
            found += _commands(command, f"{prefix} {name}")
    return found


def test_the_cli_reference_documents_every_command(built_site: Path) -> None:
    text = _text(built_site / "reference" / "cli" / "index.html")
    commands = _commands(cli, "kinetic")
    assert "kinetic batch timeline" in commands and "kinetic batch logs" in commands
    missing = [c for c in commands if f"Usage: {c} " not in text]
    assert not missing, missing


def test_the_configuration_reference_lists_every_declared_setting(built_site: Path) -> None:
    text = _text(built_site / "reference" / "configuration" / "index.html")
    missing = [spec.env for spec in registry() if spec.env not in text]
    assert not missing, missing
    assert "<!-- kinetic:settings -->" not in text


def test_the_api_reference_is_generated_from_docstrings(built_site: Path) -> None:
    text = _text(built_site / "reference" / "api" / "index.html")
    for documented in ("BatchHandle", "log_lines", "timeline", "watch", "attach_batch", "Data"):
        assert documented in text, documented
    assert "Every child's output as one stream of lines" in text


def test_the_not_run_marker_of_the_tests_never_shows_on_a_page(built_site: Path) -> None:
    """``# not run: <why>`` tells the example tests to skip a block; readers never see it."""
    shown = [
        str(page.relative_to(built_site))
        for page in built_site.rglob("*.html")
        if "# not run:" in _text(page)
    ]
    assert not shown, shown
    home = _text(built_site / "index.html")
    assert "gpu-l4" in home and "run_async_map" in home, "the block itself is still there"


def test_a_broken_link_fails_the_strict_build(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "index.md").write_text("# Home\n\nSee [nowhere](missing.md).\n")
    config = tmp_path / "mkdocs.yml"
    config.write_text("site_name: t\nstrict: true\ndocs_dir: docs\n")
    built = build_site(config, tmp_path / "site")
    assert built.returncode != 0
    assert "missing.md" in built.stderr
