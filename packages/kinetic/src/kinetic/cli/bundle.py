"""``kinetic bundle show``: what a job's code bundle would ship from a project, and what not."""

from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from kinetic.cli import render

if TYPE_CHECKING:
    from kinetic.packaging.ignore import ProjectScan

__all__ = ["bundle"]


@click.group()
def bundle() -> None:
    """Inspect the code bundle: the project files shipped with each job."""


@bundle.command()
@click.argument(
    "path",
    required=False,
    type=click.Path(exists=True, file_okay=False, path_type=Path),
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
def show(path: Path | None, as_json: bool) -> None:
    """List the files a job submitted from PATH would ship, with sizes, and what is left out.

    PATH defaults to the current directory; the bundle is made from its project root (the
    nearest ancestor with a pyproject.toml, setup.py, setup.cfg, requirements.txt or .git).
    Left-out entries say why: default (hidden directories, caches, virtualenvs, build output),
    kinetic-state, secret (never shipped), ignored (.kineticignore or .gitignore) or not-a-file
    (a socket, named pipe, device or dangling link: never opened).
    """
    from kinetic.packaging.bundle import MAX_BUNDLE_BYTES, bundle_root, scan

    root = bundle_root((path or Path.cwd()).resolve())
    scanned = scan(root, exclude=_kinetic_state_dirs())
    if as_json:
        render.emit_json(_document(scanned, MAX_BUNDLE_BYTES))
        return
    render.table(
        ["PATH", "SIZE"],
        [[entry.rel, render.size(entry.stat.st_size)] for entry in scanned.files],
        title=f"Shipped from {root}",
        empty=f"No files would be shipped from {root}.",
    )
    total = scanned.total_bytes
    click.echo(
        f"Total: {len(scanned.files)} files, {render.size(total)} ({total} bytes) uncompressed"
    )
    if total > MAX_BUNDLE_BYTES:
        click.echo(f"Over the {MAX_BUNDLE_BYTES // 2**20} MiB limit: submitting would fail.")
    if scanned.excluded:
        click.echo("")
        render.table(
            ["LEFT OUT", "REASON", "RULE"],
            [[item.rel, item.reason, item.rule] for item in scanned.excluded],
            title="Left out",
        )


def _kinetic_state_dirs() -> list[Path]:
    """Kinetic's home and a local (``file://``) store: left out as a submission leaves them."""
    from urllib.parse import unquote, urlparse

    from kinetic.config import kinetic_home
    from kinetic_runtime.settings import STORE

    dirs = [kinetic_home()]
    uri = STORE.value() or ""
    if uri.startswith("file://"):
        dirs.append(Path(unquote(urlparse(uri).path)))
    return dirs


def _document(scanned: "ProjectScan", limit: int) -> dict[str, Any]:
    return {
        "root": str(scanned.root),
        "files": [{"path": entry.rel, "size": entry.stat.st_size} for entry in scanned.files],
        "file_count": len(scanned.files),
        "total_bytes": scanned.total_bytes,
        "limit_bytes": limit,
        "excluded": [
            {"path": item.rel, "reason": item.reason, "rule": item.rule}
            for item in scanned.excluded
        ],
    }
