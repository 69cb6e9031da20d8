"""Pytest side of the image tier: availability, the stand-ins, and the session's builds.

The tier runs whenever ``buildah`` and ``debootstrap`` are installed and the tests run as root
(``chroot`` isolation needs it); the stand-in base images are built once, when the tests to
run are known, with their progress on the terminal. Otherwise the tier is skipped with one
line saying how to enable it, unless ``KINETIC_REQUIRE_IMAGES=1`` (CI) makes that an error.
"""

from __future__ import annotations

import os
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from .buildah import Buildah, ImageCommandError, ImageToolMissing, build_files, require_tools
from .standins import ensure_standins

__all__ = [
    "ACCELERATOR_ENV",
    "ACCELERATOR_MARKER",
    "ACCELERATOR_SKIP",
    "BUILD_LINES",
    "ENABLE_HINT",
    "MARKER",
    "REQUIRE_ENV",
    "ImageBuilds",
    "image_builds",
    "oci_images",
    "builds_accelerator_images",
    "image_tier_first",
    "prepare",
    "required",
    "uses_images",
]

MARKER = "images"
REQUIRE_ENV = "KINETIC_REQUIRE_IMAGES"
ACCELERATOR_MARKER = "accelerator_images"
ACCELERATOR_ENV = "KINETIC_ACCELERATOR_IMAGES"
ACCELERATOR_SKIP = (
    f"accelerator image builds skipped: {ACCELERATOR_ENV}=1 builds them (the tpu image: about "
    "40 s and 213 MB of libtpu per build; .ci/run does, in a step of its own)"
)
ENABLE_HINT = "apt-get install -y buildah debootstrap, as root, and rerun: the bases build once"
_BUILDAH = pytest.StashKey[Buildah]()
BUILD_LINES: list[str] = []
"""What the session's image builds cost, one line, for the terminal summary."""


def prepare(config: pytest.Config, *, build: bool = True) -> str | None:
    """Build the stand-ins (if ``build``) and keep the tier's buildah for the session; the
    reason the tier can't run, or None."""
    try:
        require_tools()
        if os.geteuid() != 0:
            raise ImageToolMissing("buildah's chroot isolation needs root; the tests run as a user")
        if not build:
            return None
        capture = config.pluginmanager.getplugin("capturemanager")
        with capture.global_and_fixture_disabled():
            config.stash[_BUILDAH] = ensure_standins()
    except (ImageToolMissing, ImageCommandError) as error:
        return f"image tier skipped: {error}"
    return None


def required() -> bool:
    return os.environ.get(REQUIRE_ENV, "") not in ("", "0")


@pytest.fixture(scope="session")
def oci_images(pytestconfig: pytest.Config) -> Buildah:
    """The tier's buildah, its stand-in base images built (see the plugin)."""
    buildah = pytestconfig.stash.get(_BUILDAH, None)
    if buildah is None:
        pytest.skip("image tier: the stand-in images were not prepared (is the test marked?)")
    return buildah


class ImageBuilds:
    """Builds each distinct build context once per session, tagged by its content hash, and
    removes what it built at the end (sessions share the store: disk adds up)."""

    def __init__(self, buildah: Buildah, workdir: Path) -> None:
        self.buildah = buildah
        self._workdir = workdir
        self._built: dict[str, str] = {}
        self._seconds: dict[str, float] = {}
        self._session = uuid.uuid4().hex[:8]
        """In every tag: sessions sharing the cache never remove each other's images."""

    def build(self, files: dict[str, bytes], content_hash: str, category: str) -> str:
        """The local tag of the image of ``files`` (built now unless built this session)."""
        tag = f"localhost/kinetic-test-{self._session}/{category}:{content_hash[:16]}"
        if tag not in self._built:
            where = Path(tempfile.mkdtemp(prefix=f"{category}-", dir=self._workdir))
            started = time.monotonic()
            try:
                build_files(self.buildah, files, tag, workdir=where)
            finally:  # a failed build (a test of failures) costs time too
                self._seconds[tag] = time.monotonic() - started
            self._built[tag] = content_hash
        return tag

    def built(self) -> list[str]:
        return list(self._built)

    def cost_line(self) -> str:
        """How many images this session built (or tried to) and the seconds each took."""
        each = ", ".join(
            f"{tag.rsplit('/', 1)[-1]} {seconds:.0f} s" for tag, seconds in self._seconds.items()
        )
        return (
            f"image tier: {len(self._seconds)} image builds ({each or 'none'}; "
            f"{self.buildah.driver} storage)"
        )

    def remove_all(self) -> None:
        for tag in self._built:
            self.buildah.run("rmi", "--force", tag)
        self._built.clear()


@pytest.fixture(scope="session")
def image_builds(
    oci_images: Buildah, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ImageBuilds]:
    builds = ImageBuilds(oci_images, tmp_path_factory.mktemp("image-builds"))
    try:
        yield builds
    finally:
        BUILD_LINES.append(builds.cost_line())
        builds.remove_all()


def uses_images(item: pytest.Item) -> bool:
    return item.get_closest_marker(MARKER) is not None


def image_tier_first(items: list[pytest.Item]) -> None:
    """Move the tier's tests to the front of the run, in their order.

    Each test worker builds an image the first time one of its tests needs it, so the tier's
    tests should all run on one worker. The whole suite's workers take contiguous shares of
    the run and steal from the end of each other's: at the front, the tier stays with the
    first worker (it had been split now and then, and two workers built the same images,
    40 s of CPU), and its long tests no longer end the run."""
    items.sort(key=lambda item: not uses_images(item))


def builds_accelerator_images() -> bool:
    return os.environ.get(ACCELERATOR_ENV, "") not in ("", "0")
