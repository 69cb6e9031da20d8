"""The fake Cloud Build API's builds, run for real with buildah.

A ``Build`` request Kinetic sends carries its context inline (the ``unpack-context`` step's
``KINETIC_BUILD_CONTEXT[_N]`` variables: a base64 gzipped tar) and a ``docker build`` step
naming the image. :class:`BuildahCloudBuilds` unpacks that context, builds it the way the
image tier builds (``buildah bud``, ``chroot`` isolation, never pulling: the
stand-in bases), once per distinct context in the session, and registers the image with the
node agent's :class:`~kinetic_testing.images.pods.LocalImages` under the URI the build
"pushes", so a pod naming that URI runs in it. The fake registry then reports the tag.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import io
import re
import tarfile
from typing import Any

from kinetic_testing.cloudbuild_state import BuildOutcome

from .buildah import ImageCommandError
from .fixtures import ImageBuilds
from .pods import LocalImages

__all__ = ["BuildahCloudBuilds", "inline_context"]

_PIECE = re.compile(r"^KINETIC_BUILD_CONTEXT(?:_(\d+))?=(.*)$", re.DOTALL)
_HASH_TAG = re.compile(r"^kinetic-([0-9a-f]{16})$")
"""The build tag with the context's content hash (``build_request`` adds it)."""
_STEP_FAILED = (
    'ERROR: build step 1 "gcr.io/cloud-builders/docker" failed: '
    "step exited with non-zero status: 1\n"
)


def inline_context(build: dict[str, Any]) -> dict[str, bytes] | None:
    """The files of a build's inline context (None when it has none: a GCS source)."""
    pieces: dict[int, str] = {}
    for step in build.get("steps") or []:
        for item in step.get("env") or []:
            if match := _PIECE.match(str(item)):
                pieces[int(match.group(1) or 0)] = match.group(2)
    if not pieces:
        return None
    raw = gzip.decompress(base64.b64decode("".join(pieces[i] for i in sorted(pieces))))
    files: dict[str, bytes] = {}
    with tarfile.open(fileobj=io.BytesIO(raw)) as tar:
        for member in tar.getmembers():
            extracted = tar.extractfile(member) if member.isfile() else None
            if extracted is not None:
                files[member.name] = extracted.read()
    return files


class BuildahCloudBuilds:
    """A :data:`~kinetic_testing.cloudbuild_fake.BuildRunner` that builds with buildah."""

    def __init__(self, builds: ImageBuilds, images: LocalImages) -> None:
        self._builds = builds
        self._images = images
        self.built: list[str] = []
        """The image URIs built, in order (a second submission of one is not built again)."""

    def __call__(self, build: dict[str, Any]) -> BuildOutcome:
        files = inline_context(build)
        if files is None:
            return BuildOutcome(
                "FAILURE", log="the fake Cloud Build builds inline contexts only; this build "
                "has a storage source\n", failure_detail="unsupported source",
            )  # fmt: skip
        [uri] = build.get("images") or [""]
        category = uri.rsplit("/", 1)[-1].partition(":")[0] or "image"
        # Kinetic's content hash, as the image tier's direct builds use it: one image for both.
        tagged = [m.group(1) for t in build.get("tags") or [] if (m := _HASH_TAG.match(str(t)))]
        digest = (
            tagged[0]
            if tagged
            else hashlib.sha256(repr(sorted(files.items())).encode()).hexdigest()
        )
        try:
            local_tag = self._builds.build(files, digest, category)
        except ImageCommandError as error:
            return BuildOutcome(
                "FAILURE", log=f"{error}\n{_STEP_FAILED}",
                failure_detail='Build step failure: build step 1 "gcr.io/cloud-builders/docker" '
                "failed: step exited with non-zero status: 1",
            )  # fmt: skip
        self._images.add(uri, local_tag)
        self.built.append(uri)
        return BuildOutcome("SUCCESS", log=f"Successfully built {local_tag}\n")
