"""Generate the Dockerfile and build context of a Kinetic image, and hash them.

Base image choice, by accelerator category (``{py}`` is the client's ``major.minor``):

=========  ==========================================  =========================================
category   base image                                  Python and extras
=========  ==========================================  =========================================
cpu        ``python:{py}-slim``                        the base image's own Python
gpu        ``nvidia/cuda:12.4.1-runtime-ubuntu22.04``  Python ``{py}`` installed by ``uv``; CUDA
                                                       libraries come from the base image;
                                                       ``jax[cuda12]`` is installed
tpu        ``python:{py}-slim``                        the base image's Python; ``jax[tpu]``
                                                       brings ``libtpu`` from the package index
                                                       (JAX before 0.5.1: from libtpu's release
                                                       index, added only for such a pin)
=========  ==========================================  =========================================

GPU and TPU images install the JAX build of :data:`kinetic_protocol.requirements.JAX_BUILDS`
(a ``jax`` requirement of the user's gets the build's extra: see
:func:`kinetic_protocol.requirements.with_jax_build`). It shows in the
Dockerfile, so the content hash, and with it the bundled image's tag, changes with it. No image
sets ``KERAS_BACKEND``: the runtime defaults it to ``jax`` in every job, whatever the image
(``kinetic_runtime.workspace.JOB_DEFAULTS``).

Layers run from heaviest and least volatile to lightest: base image, ``uv``, Python, the
non-root user pods run as, then one install of the user's requirements together with
``kinetic-runtime`` pinned to the client's version (one resolution, so a conflict between them
fails the build instead of silently replacing a user pin), which also gives the venv to that
user: ownership changed in a later step would store the venv twice. The project's code is
never part of the image: it travels as a bundle in the object store, so editing code does not
rebuild anything.

The content hash covers exactly what goes into the image: the Dockerfile text (which names the
base image, Python version, category and Kinetic version) and every file of the build context,
by relative path and bytes. It never sees absolute paths, timestamps or the environment.
"""

import hashlib
import re
import shlex
import sys
from collections.abc import Mapping
from typing import Literal

import msgspec

from kinetic_protocol.errors import ConfigError
from kinetic_protocol.requirements import (
    Requirements,
    jax_requirement,
    requirement_extras,
    requirement_name,
    with_jax_build,
)

__all__ = [
    "BASE_IMAGES",
    "CUDA_BASE_IMAGE",
    "LIBTPU_FIND_LINKS",
    "needs_libtpu_index",
    "RUNTIME_EXTRAS",
    "RUNTIME_PACKAGE",
    "runtime_requirement",
    "UV_IMAGE",
    "BuildContext",
    "Category",
    "base_image_for",
    "build_context",
    "content_hash",
    "python_minor",
]

Category = Literal["cpu", "gpu", "tpu"]

CUDA_BASE_IMAGE = "nvidia/cuda:12.4.1-runtime-ubuntu22.04"
UV_IMAGE = "ghcr.io/astral-sh/uv:0.9.5"
"""Where the ``uv`` binary is copied from; pinned so image contents do not drift."""
RUNTIME_PACKAGE = "kinetic-runtime"
RUNTIME_EXTRAS = ("gcs", "debug")
"""Always in an image: the GCS client (stores, data) and debugpy (``debug=True``). A call
that loads ``hf://`` data adds ``hf`` (the ``datasets`` library), and only then."""
LIBTPU_FIND_LINKS = "https://storage.googleapis.com/jax-releases/libtpu_releases.html"
BASE_IMAGES: dict[str, str] = {
    "cpu": "python:{py}-slim",
    "gpu": CUDA_BASE_IMAGE,
    "tpu": "python:{py}-slim",
}
"""The choice table above, as data. ``{py}`` is replaced by ``major.minor``."""

_HASH_FORMAT = b"kinetic-image-context/1\n"
_REQUIREMENTS_PATH = "requirements.txt"
_WHEELS_DIR = "wheels"
_VENV = "/opt/venv"
_USER_ID = 1000
"""Matches the ``runAsUser`` of the pods Kinetic creates (kinetic_gke.manifests)."""


class BuildContext(msgspec.Struct, frozen=True, kw_only=True):
    """Everything Cloud Build receives: the Dockerfile is one of ``files``."""

    files: dict[str, bytes]
    """Relative path -> content. ``Dockerfile`` is always present."""
    category: Category
    python_version: str
    kinetic_version: str
    base_image: str

    @property
    def dockerfile(self) -> str:
        return self.files["Dockerfile"].decode("utf-8")

    @property
    def content_hash(self) -> str:
        """sha256 (hex) of the files; see :func:`content_hash`."""
        return content_hash(self.files)


def python_minor(version: str | None = None) -> str:
    """``"3.11"`` for ``"3.11.9"``, ``"3.11"`` or ``None`` (this interpreter)."""
    if version is None:
        return f"{sys.version_info.major}.{sys.version_info.minor}"
    parts = version.strip().split(".")
    if len(parts) < 2 or not all(p.isdigit() for p in parts[:2]):
        raise ConfigError(f"Python version {version!r} should look like '3.11' or '3.11.9'.")
    return f"{int(parts[0])}.{int(parts[1])}"


def base_image_for(category: Category, python_version: str) -> str:
    """The base image of the choice table for ``category``."""
    return BASE_IMAGES[category].format(py=python_minor(python_version))


def content_hash(files: dict[str, bytes]) -> str:
    """Hash path names and contents in sorted path order, each length-prefixed.

    Sorting makes the hash independent of dict order; length prefixes keep two different
    file sets from ever serialising to the same bytes.
    """
    digest = hashlib.sha256(_HASH_FORMAT)
    for path in sorted(files):
        name = path.replace("\\", "/").encode("utf-8")
        data = files[path]
        digest.update(b"%d:" % len(name) + name)
        digest.update(b"%d:" % len(data) + data)
    return digest.hexdigest()


_FIRST_JAX_WITH_PYPI_LIBTPU = (0, 5, 1)
"""``jax[tpu]`` from this version on depends on ``libtpu`` from PyPI; before it, on
``libtpu-nightly``, published only on libtpu's release index."""
_UPPER_BOUND_RE = re.compile(r"(===|==|~=|<=|<)\s*(\d+(?:\.\d+)*)")


def needs_libtpu_index(lines: tuple[str, ...] | list[str]) -> bool:
    """Whether an install of ``lines`` can only succeed with libtpu's release index.

    Only for what the package index cannot serve: ``libtpu-nightly`` named, or a ``jax[tpu]``
    requirement bounded below 0.5.1. Added otherwise, the index would be one more host the
    build must reach, and a build behind a mirror or proxy (where ``storage.googleapis.com``
    is not reachable) fails on it.
    """
    for line in lines:
        name = requirement_name(line)
        if name == "libtpu-nightly":
            return True
        if name != "jax" or "tpu" not in requirement_extras(line):
            continue
        for operator, version in _UPPER_BOUND_RE.findall(line.split(";", 1)[0]):
            bound = tuple(int(part) for part in version.split("."))
            first = _FIRST_JAX_WITH_PYPI_LIBTPU
            if bound < first or (operator == "<" and bound == first):
                return True
    return False


def _python_lines(category: Category, py: str) -> list[str]:
    if category == "gpu":
        return [
            "# The CUDA runtime image has no Python: uv installs a standalone build.",
            "RUN apt-get update \\",
            " && apt-get install -y --no-install-recommends ca-certificates \\",
            " && rm -rf /var/lib/apt/lists/*",
            f"RUN uv python install {py} && uv venv {_VENV} --python {py}",
        ]
    return [f"RUN uv venv {_VENV} --python /usr/local/bin/python{py}"]


def runtime_requirement(kinetic_version: str, extras: tuple[str, ...] = ()) -> str:
    """``kinetic-runtime[gcs,debug,...]==VERSION``; added extras sorted, so the text is stable."""
    chosen = [*RUNTIME_EXTRAS, *sorted(set(extras) - set(RUNTIME_EXTRAS))]
    return f"{RUNTIME_PACKAGE}[{','.join(chosen)}]=={kinetic_version}"


def build_context(
    requirements: Requirements,
    *,
    category: Category,
    kinetic_version: str,
    python_version: str | None = None,
    base_image: str | None = None,
    runtime_extras: tuple[str, ...] = (),
    runtime_wheels: Mapping[str, bytes] | None = None,
) -> BuildContext:
    """The Dockerfile and files of an image for ``requirements`` on ``category``.

    ``base_image`` overrides the choice table (the Dockerfile still assumes a Debian-like image
    with ``python{py}`` on ``/usr/local/bin`` for cpu/tpu). ``runtime_extras`` adds extras of
    ``kinetic-runtime`` (``hf``). ``runtime_wheels`` (file name -> bytes, from
    :func:`kinetic_gke.images.local_wheels.local_runtime_wheels`) are Kinetic's own unpublished
    wheels: they travel in the context and are installed from it instead of the index. With no
    requirements the result is also what a prebuilt base image contains.
    """
    py = python_minor(python_version)
    base = base_image or base_image_for(category, py)
    runtime = runtime_requirement(kinetic_version, runtime_extras)
    install = ["uv", "pip", "install", "--no-cache"]
    files: dict[str, bytes] = {}
    local: list[str] = []
    for filename, data in sorted((runtime_wheels or {}).items()):
        files[f"{_WHEELS_DIR}/{filename}"] = data
        project = filename.split("-", 1)[0].replace("_", "-")
        where = f"@ file:///opt/kinetic/{_WHEELS_DIR}/{filename}"
        if project == RUNTIME_PACKAGE:  # same extras, this file instead of the index's release
            runtime = f"{runtime.split('==', 1)[0]} {where}"
        else:
            local.append(f"{project} {where}")
    user_lines = with_jax_build(requirements.lines, category)
    if user_lines:
        files[_REQUIREMENTS_PATH] = "".join(f"{line}\n" for line in user_lines).encode("utf-8")
        install += ["-r", f"/opt/kinetic/{_REQUIREMENTS_PATH}"]
    jax = jax_requirement(user_lines, category)
    if category == "tpu" and needs_libtpu_index(user_lines):
        install += ["--find-links", LIBTPU_FIND_LINKS]
    if jax:
        install.append(jax)
    install += [runtime, *local]
    lines = [
        "# Generated by Kinetic; the image tag is a hash of this file and its build context.",
        f"# category={category} python={py} kinetic={kinetic_version}",
        f"FROM {base}",
        f"COPY --from={UV_IMAGE} /uv /uvx /usr/local/bin/",
        "ENV UV_PYTHON_INSTALL_DIR=/opt/python \\",
        "    UV_LINK_MODE=copy \\",
        "    UV_COMPILE_BYTECODE=1 \\",
        f"    VIRTUAL_ENV={_VENV} \\",
        f"    PATH={_VENV}/bin:$PATH \\",
        "    PYTHONUNBUFFERED=1",
        *_python_lines(category, py),
        "# Pods run as this user (restricted Pod Security); it owns the venv, so a prebuilt",
        "# image can still install a job's requirements when the pod starts.",
        f"RUN useradd --uid {_USER_ID} --user-group --create-home kinetic \\",
        f" && mkdir -p /workspace && chown {_USER_ID}:{_USER_ID} /workspace",
    ]
    if user_lines:
        lines.append(f"COPY {_REQUIREMENTS_PATH} /opt/kinetic/{_REQUIREMENTS_PATH}")
    if local:
        lines.append(f"COPY {_WHEELS_DIR} /opt/kinetic/{_WHEELS_DIR}")
    lines += [
        "# The venv changes owner in the step that fills it: a later `chown -R` would store",
        "# every file of it again, in a layer of its own (gigabytes for JAX's GPU build).",
        "RUN " + shlex.join(install) + " \\",
        f" && chown -R {_USER_ID}:{_USER_ID} {_VENV}",
        f"USER {_USER_ID}",
        "WORKDIR /workspace",
        'CMD ["python", "-m", "kinetic_runtime"]',
    ]
    files["Dockerfile"] = ("\n".join(lines) + "\n").encode("utf-8")
    return BuildContext(
        files=files,
        category=category,
        python_version=py,
        kinetic_version=kinetic_version,
        base_image=base,
    )
