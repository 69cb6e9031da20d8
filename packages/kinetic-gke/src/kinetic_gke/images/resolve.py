"""Turn ``container_image``/``base_image_repo`` into the image a Kubernetes job runs.

Three modes (see the API reference of ``kinetic.run``):

* ``None`` or ``"bundled"``: an image with the user's dependencies baked in, built on Cloud Build
  and tagged by its content hash, at
  ``{region}-docker.pkg.dev/{project}/kinetic/{category}:{hash[:16]}``. An existing tag is
  reused without a build.
* ``"prebuilt"``: ``{base_image_repo}/kinetic-{category}:{kinetic_version}-py{major}{minor}``;
  the user's requirements are returned in :attr:`ResolvedImage.requirements` for the runtime to
  install at pod start (contract: :func:`kinetic_protocol.requirements.prebuilt_requirements`).
  The base image already holds the accelerator's JAX build; when the user has requirements,
  their ``jax`` gets that build's extra, or the build joins them when they do not name ``jax``,
  so their install cannot swap it for the CPU one.
* any other string: used as-is, after a sanity check that it is an image reference.
"""

import logging
import re
from collections.abc import Iterable
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Literal

import msgspec

from kinetic_gke.images.cloudbuild import ImageBuilder
from kinetic_gke.images.dockerfile import (
    LIBTPU_FIND_LINKS,
    Category,
    build_context,
    needs_libtpu_index,
    python_minor,
    runtime_requirement,
)
from kinetic_gke.images.local_wheels import local_runtime_wheels
from kinetic_gke.images.registry import parse_image_reference
from kinetic_gke.settings import BASE_IMAGE_REPO
from kinetic_protocol.accelerators import Accelerator
from kinetic_protocol.errors import ConfigError
from kinetic_protocol.requirements import (
    Requirements,
    discover_requirements,
    jax_build_notice,
    jax_requirement,
    prebuilt_requirements,
    with_jax_build,
)

__all__ = [
    "ARTIFACT_REPOSITORY",
    "BASE_IMAGE_REPO_ENV",
    "DEFAULT_BASE_IMAGE_REPO",
    "ImageMode",
    "ResolvedImage",
    "build_base_images",
    "bundled_image_uri",
    "kinetic_version",
    "prebuilt_image_uri",
    "region_from_zone",
    "resolve_base_image_repo",
    "resolve_image",
]

_said: set[str] = set()

ARTIFACT_REPOSITORY = "kinetic"
"""The Artifact Registry repository bundled images go to (created by ``kinetic up``)."""
BASE_IMAGE_REPO_ENV = BASE_IMAGE_REPO.env
DEFAULT_BASE_IMAGE_REPO = BASE_IMAGE_REPO.default or "kinetic"
ImageMode = Literal["bundled", "prebuilt", "custom"]
_ZONE_RE = re.compile(r"^(?P<region>[a-z]+(?:-[a-z]+)*\d+)(?:-[a-z])?$")
_CATEGORIES: tuple[Category, ...] = ("cpu", "gpu", "tpu")


class ResolvedImage(msgspec.Struct, frozen=True, kw_only=True):
    """The image a job runs, how it was chosen, and what the pod must install at start."""

    uri: str
    mode: ImageMode
    requirements: list[str] = msgspec.field(default_factory=list)
    """Non-empty only for ``prebuilt``: store in ``CallDescriptor.requirements``."""


def kinetic_version() -> str:
    """Kinetic's version, which images pin ``kinetic-runtime`` to: this package's own, as
    Kinetic's packages are released in lockstep (it is installed without the client too)."""
    try:
        return version("kinetic-gke")
    except PackageNotFoundError:  # a source tree that is not installed
        return "0.0.0"


def region_from_zone(zone: str) -> str:
    """``us-central1`` for ``us-central1-a`` (a region is returned unchanged)."""
    match = _ZONE_RE.match(zone.strip()) if isinstance(zone, str) else None
    if not match:
        raise ConfigError(
            f"Zone {zone!r} does not look like a GCP zone such as 'us-central1-a'. "
            "Pass zone=, or set KINETIC_ZONE."
        )
    return match["region"]


def resolve_base_image_repo(base_image_repo: str | None) -> str:
    """Argument > ``KINETIC_BASE_IMAGE_REPO`` > ``"kinetic"``."""
    repo = base_image_repo or BASE_IMAGE_REPO.value() or DEFAULT_BASE_IMAGE_REPO
    return repo.strip().rstrip("/")


def prebuilt_image_uri(
    repo: str, category: Category, *, python_version: str | None = None, version: str = ""
) -> str:
    """``{repo}/kinetic-{category}:{version}-py{major}{minor}``."""
    py = python_minor(python_version).replace(".", "")
    uri = f"{repo}/kinetic-{category}:{version or kinetic_version()}-py{py}"
    parse_image_reference(uri)  # a bad repo fails here, not at pod start
    return uri


def bundled_image_uri(project: str, zone: str, category: Category, content_hash: str) -> str:
    """Where a bundled image with ``content_hash`` lives in the project's Artifact Registry."""
    if not project:
        raise ConfigError(
            "Bundled images are built in a GCP project, and none is set. Pass project=, set "
            "KINETIC_PROJECT, or use container_image='prebuilt' or an image URI."
        )
    region = region_from_zone(zone)
    return f"{region}-docker.pkg.dev/{project}/{ARTIFACT_REPOSITORY}/{category}:{content_hash[:16]}"


def resolve_image(
    *,
    container_image: str | None,
    base_image_repo: str | None,
    accelerator: Accelerator,
    project_root: Path,
    project: str,
    zone: str,
    builder: ImageBuilder | None = None,
    build_service_account: str = "",
    logs_bucket: str = "",
    runtime_extras: tuple[str, ...] = (),
) -> ResolvedImage:
    """Pick the mode, and for ``bundled`` make sure the image exists (building it if not), as
    ``build_service_account`` when given (its logs go to ``logs_bucket``).

    ``runtime_extras`` (``("hf",)`` for a call with ``hf://`` data) go into a bundled image,
    or join a prebuilt image's pod-start requirements; a custom image must have them.
    """
    category = accelerator.category
    choice = container_image.strip() if isinstance(container_image, str) else container_image
    if choice is None or choice == "bundled":
        requirements = discover_requirements(project_root)
        _say_jax_build(requirements.lines, category)
        context = build_context(
            requirements,
            category=category,
            kinetic_version=kinetic_version(),
            runtime_extras=runtime_extras,
            runtime_wheels=local_runtime_wheels(),
        )
        uri = bundled_image_uri(project, zone, category, context.content_hash)
        builder = builder or ImageBuilder(
            project=project,
            location=region_from_zone(zone),
            service_account=build_service_account,
            logs_bucket=logs_bucket,
        )
        return ResolvedImage(uri=builder.ensure(context, uri), mode="bundled")
    if choice == "prebuilt":
        repo = resolve_base_image_repo(base_image_repo)
        lines = prebuilt_requirements(project_root)
        _say_jax_build(lines, category)
        lines = _with_jax(lines, category)
        if runtime_extras:  # the base image has the runtime: this adds only the extras' deps
            lines = [*lines, runtime_requirement(kinetic_version(), runtime_extras)]
        return ResolvedImage(
            uri=prebuilt_image_uri(repo, category), mode="prebuilt", requirements=lines
        )
    if not isinstance(choice, str) or not choice:
        raise ConfigError(
            f"container_image={container_image!r} is not valid. Use None/'bundled', "
            "'prebuilt', or an image URI."
        )
    parse_image_reference(choice)
    return ResolvedImage(uri=choice, mode="custom")


def _with_jax(lines: list[str], category: Category) -> list[str]:
    """Pod-start lines with the JAX build (and, on TPU, libtpu's release index when the lines
    need it: :func:`~kinetic_gke.images.dockerfile.needs_libtpu_index`); empty stays empty
    (the base image has the build)."""
    if not lines:
        return lines
    built = list(with_jax_build(lines, category))
    jax = jax_requirement(built, category)
    built += [jax] if jax else []
    index = f"--find-links {LIBTPU_FIND_LINKS}"
    if category == "tpu" and needs_libtpu_index(built) and index not in built:
        built.append(index)
    return built


def _say_jax_build(lines: tuple[str, ...] | list[str], category: Category) -> None:
    """Tell the user, once per process, that their ``jax`` is installed as another build.

    One plain sentence on the ``kinetic`` logger tree, as the client's notices are: shown on
    stderr when the application configured no logging, through its handlers when it did.
    """
    message = jax_build_notice(lines, category)
    if message and message not in _said:
        _said.add(message)
        logging.getLogger("kinetic.images").warning(message)


def build_base_images(
    categories: Iterable[Category],
    repo: str,
    python_version: str | None,
    builder: ImageBuilder,
) -> list[str]:
    """Build and push the prebuilt base image of each category; returns their URIs.

    Used by ``kinetic build-image``. Always builds (tags are per Kinetic version, not content,
    so republishing must be possible). ``repo`` must be a registry Cloud Build can push to:
    Artifact Registry works as is; Docker Hub needs credentials configured in Cloud Build.
    """
    version_ = kinetic_version()
    uris: list[str] = []
    for category in categories:
        if category not in _CATEGORIES:
            raise ConfigError(
                f"Unknown image category {category!r}; expected one of {', '.join(_CATEGORIES)}."
            )
        context = build_context(
            Requirements(lines=(), source=""),
            category=category,
            kinetic_version=version_,
            python_version=python_version,
            runtime_wheels=local_runtime_wheels(),
        )
        uri = prebuilt_image_uri(
            resolve_base_image_repo(repo),
            category,
            python_version=python_version,
            version=version_,
        )
        uris.append(builder.build(context, uri))
    return uris
