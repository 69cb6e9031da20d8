"""``kinetic build-image``: publish the prebuilt base images that ``container_image="prebuilt"``
uses, one per accelerator category, through Cloud Build."""

from typing import TYPE_CHECKING

import click

from kinetic_gke.cli import pass_host
from kinetic_protocol.commands import CommandHost

if TYPE_CHECKING:
    from kinetic_gke.images import ImageBuilder

__all__ = ["build_image"]

_CATEGORIES = ("cpu", "gpu", "tpu")


def make_builder(project: str, zone: str) -> "ImageBuilder":
    """The Cloud Build client for ``project`` in ``zone``'s region (tests replace this)."""
    from kinetic_gke.images import ImageBuilder, region_from_zone

    return ImageBuilder(project=project, location=region_from_zone(zone))


@click.command("build-image")
@click.option(
    "--category",
    "categories",
    type=click.Choice(_CATEGORIES),
    multiple=True,
    help="Which base image to build (repeatable); all three by default.",
)
@click.option(
    "--repo",
    default=None,
    help="Repository to push to (default: KINETIC_BASE_IMAGE_REPO, then 'kinetic').",
)
@click.option("--python", "python_version", default=None, help="Python minor, e.g. 3.11.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
@pass_host
def build_image(
    host: CommandHost,
    categories: tuple[str, ...],
    repo: str | None,
    python_version: str | None,
    as_json: bool,
) -> None:
    """Build and push the prebuilt base images (for container_image="prebuilt").

    The builds run on Cloud Build in the configured project; the repository must be one Cloud
    Build can push to (Artifact Registry as is; Docker Hub with credentials set up there).
    """
    from kinetic_gke.images import build_base_images, resolve_base_image_repo
    from kinetic_protocol import ConfigError

    settings = host.backend_settings()
    project = settings.project
    if not project:
        raise ConfigError(
            "kinetic build-image runs Cloud Build in a GCP project: pass --project or set "
            "KINETIC_PROJECT."
        )
    builder = make_builder(project, settings.zone)
    uris = build_base_images(
        categories or _CATEGORIES,  # type: ignore[arg-type]
        resolve_base_image_repo(repo),
        python_version,
        builder,
    )
    if as_json:
        host.emit_json({"images": uris})
        return
    for uri in uris:
        click.echo(uri)
