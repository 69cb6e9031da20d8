"""Stand-in base images, made here from Debian packages and PyPI wheels, built once and cached.

No container registry can be reached from the test machines, so each base image the generated
Dockerfile names is made locally and committed to the tier's buildah storage under the name a
``FROM`` or ``COPY --from`` resolves to (``--pull=never``):

* ``python:{py}-slim`` (cpu and tpu): a Debian ``bookworm`` root file system made by
  ``debootstrap --variant=minbase`` with ``python{py}`` and ``ca-certificates``, with
  ``/usr/local/bin/python{py}`` linking to Debian's interpreter, as the official image has it
  there. Debian's interpreter stands in for the official image's own build of the same minor.
* the ``uv`` image (:data:`kinetic_gke.images.dockerfile.UV_IMAGE`): ``/uv`` and ``/uvx`` from
  ``uv``'s PyPI wheel of the same version, ``FROM scratch``.

The gpu base (``nvidia/cuda:...-ubuntu22.04``) has no stand-in yet: its Dockerfile installs
Python with ``uv python install``, whose downloads are not reachable here.

Each image carries a label with its key, a hash of what goes into it; a stand-in whose label
differs is rebuilt. The storage lives under ``$KINETIC_IMAGES_CACHE`` (default
``~/.cache/kinetic/oci-images``)::

    python -m kinetic_testing.images build     # what CI runs; the test plugin does it too
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from kinetic_testing.cached_build import Progress, build_lock

from .buildah import Buildah, ImageCommandError, require_tools

__all__ = [
    "CACHE_ENV",
    "KEY_LABEL",
    "StandIn",
    "cache_root",
    "debian_mirror",
    "ensure_standins",
    "standins",
]

CACHE_ENV = "KINETIC_IMAGES_CACHE"
KEY_LABEL = "dev.kinetic.standin-key"
_FORMAT = "kinetic-standin/1"
_SUITE = "bookworm"
_DEFAULT_MIRROR = "http://deb.debian.org/debian"
_PYTHON = "3.11"
_DEBIAN_BUNDLE = "/etc/ssl/certs/ca-certificates.crt"
_BASE_ENV = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
_UV_VERSION = "0.9.5"
_UV_IMAGE = f"ghcr.io/astral-sh/uv:{_UV_VERSION}"
"""Kept equal to ``kinetic_gke.images.dockerfile.UV_IMAGE`` (a test checks it): this package
does not depend on kinetic-gke."""


@dataclass(frozen=True)
class StandIn:
    """One stand-in image: the name it is committed under and what goes into it."""

    name: str
    inputs: str

    @property
    def key(self) -> str:
        return hashlib.sha256(f"{_FORMAT}\n{self.inputs}".encode()).hexdigest()[:16]


def standins(python: str = _PYTHON) -> tuple[StandIn, StandIn]:
    """The Python base and the ``uv`` image, for ``python`` (``major.minor``)."""
    packages = f"python{python},ca-certificates"
    trust = hashlib.sha256(_trust_bundle().read_bytes()).hexdigest()[:16]
    return (
        StandIn(
            f"docker.io/library/python:{python}-slim",
            f"debootstrap minbase {_SUITE} include={packages} link=/usr/local/bin/python{python}"
            f" trust={trust}",
        ),
        StandIn(_UV_IMAGE, f"uv wheel {_UV_VERSION} /uv /uvx from scratch"),
    )


def _trust_bundle() -> Path:
    """This machine's CA bundle: a build reaches the package index only through the proxies
    and CAs this machine trusts, so the Python stand-in carries the same bundle."""
    return Path(os.environ.get("SSL_CERT_FILE") or _DEBIAN_BUNDLE)


def cache_root() -> Path:
    """``$KINETIC_IMAGES_CACHE``, else ``kinetic/oci-images`` in the XDG cache directory."""
    override = os.environ.get(CACHE_ENV)
    if override:
        return Path(override).expanduser().absolute()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "kinetic" / "oci-images"


def debian_mirror() -> str:
    """The Debian archive this machine's apt uses (so debootstrap reaches what apt reaches)."""
    for source in sorted(Path("/etc/apt/sources.list.d").glob("*.sources")):
        for line in source.read_text(errors="replace").splitlines():
            if line.startswith("URIs:") and "security" not in line:
                return line.split(":", 1)[1].split()[0]
    return _DEFAULT_MIRROR


def ensure_standins(python: str = _PYTHON, *, out: TextIO | None = None) -> Buildah:
    """The tier's buildah, with every stand-in for ``python`` built (first time: about 2 min).

    Raises ``ImageToolMissing`` when buildah or debootstrap is absent, ``ImageCommandError``
    when a build fails. A file lock keeps concurrent test sessions from building twice.
    """
    require_tools()
    root = cache_root()
    root.mkdir(parents=True, exist_ok=True)
    buildah = Buildah(root)
    progress = Progress("kinetic stand-in images", out or sys.stderr)
    with build_lock(root):
        python_base, uv_image = standins(python)
        stale = [image for image in (python_base, uv_image)
                 if buildah.label(image.name, KEY_LABEL) != image.key]  # fmt: skip
        if python_base in stale:
            _build_python_base(buildah, python_base, python, progress)
        if uv_image in stale:
            _build_uv_image(buildah, uv_image, progress)
        if stale:
            buildah.run("rmi", "--prune")  # the stand-ins these replaced
    return buildah


def _build_python_base(buildah: Buildah, image: StandIn, python: str, progress: Progress) -> None:
    mirror = debian_mirror()
    progress.say(f"building {image.name}: debootstrap {_SUITE} from {mirror} (about 1.5 min)")
    with tempfile.TemporaryDirectory(prefix="standin-rootfs-", dir=buildah.root) as scratch:
        rootfs = Path(scratch) / "rootfs"
        _run_or_raise(
            [
                "debootstrap", "--variant=minbase", f"--include=python{python},ca-certificates",
                _SUITE, str(rootfs), mirror,
            ],
            f"debootstrap of {_SUITE} from {mirror}",
        )  # fmt: skip
        link = rootfs / "usr/local/bin" / f"python{python}"
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(f"/usr/bin/python{python}")
        shutil.rmtree(rootfs / "var/cache/apt/archives", ignore_errors=True)
        shutil.copyfile(_trust_bundle(), rootfs / _DEBIAN_BUNDLE.lstrip("/"))
        progress.say(f"committing {image.name}")
        _commit_directory(
            buildah, rootfs, image, cmd=f'["python{python}"]', env={"SSL_CERT_FILE": _DEBIAN_BUNDLE}
        )
    progress.say(f"built {image.name}")


def _run_or_raise(argv: list[str], what: str) -> None:
    """Run a build step; its failure is an ImageCommandError quoting the end of its output."""
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise ImageCommandError(
            f"{what} exited {done.returncode}:\n{(done.stdout + done.stderr)[-4000:]}"
        )


def _build_uv_image(buildah: Buildah, image: StandIn, progress: Progress) -> None:
    progress.say(f"building {image.name} from uv's PyPI wheel")
    with tempfile.TemporaryDirectory(prefix="standin-uv-", dir=buildah.root) as scratch:
        target = Path(scratch) / "wheel"
        _run_or_raise(
            [
                *_uv_command(), "pip", "install", "--quiet", "--no-deps", "--python",
                sys.executable, "--target", str(target), f"uv=={_UV_VERSION}",
            ],
            f"installing uv=={_UV_VERSION} from PyPI",
        )  # fmt: skip
        rootfs = Path(scratch) / "rootfs"
        rootfs.mkdir()
        for name in ("uv", "uvx"):
            found = next(target.rglob(f"bin/{name}"), None)
            if found is None:
                raise ImageCommandError(f"uv=={_UV_VERSION}'s wheel has no bin/{name}")
            shutil.copy2(found, rootfs / name)
            (rootfs / name).chmod(0o755)
        _commit_directory(buildah, rootfs, image, cmd='["/uv"]', env={})
    progress.say(f"built {image.name}")


def _uv_command() -> list[str]:
    """A ``uv`` to fetch the wheel with: on PATH, else the one ``python3 -m uv`` runs (as the
    README's test command does)."""
    found = shutil.which("uv")
    return [found] if found else ["python3", "-m", "uv"]


def _commit_directory(
    buildah: Buildah, rootfs: Path, image: StandIn, *, cmd: str, env: dict[str, str]
) -> None:
    """Commit ``rootfs`` as one layer ``FROM scratch`` named ``image.name``, labelled."""
    container = buildah.run("from", "scratch").strip()
    try:
        buildah.run("copy", container, f"{rootfs}/", "/")
        settings = [f"--env={key}={value}" for key, value in {**_BASE_ENV, **env}.items()]
        buildah.run(
            "config", "--label", f"{KEY_LABEL}={image.key}", "--cmd", cmd, *settings, container
        )
        buildah.run("commit", "--rm", container, image.name)
    except BaseException:
        subprocess.run(buildah.command("rm", container), capture_output=True, check=False)
        raise
