"""Run ``buildah`` against the tier's own image storage (``chroot`` isolation).

Every command goes through :class:`Buildah`, so all images of the tier live in one store under
the cache (never the machine's default ``/var/lib/containers``), and the flags that work on this
machine kind (no user namespaces, no cgroups) are given in one place.

The store uses the ``overlay`` driver where this machine can mount overlayfs there, else
``vfs``. ``vfs`` copies a whole root file system for every layer and every container: with it
the tier spent 107 s of system CPU on 2 cores copying files, against 19 s with ``overlay``.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

__all__ = [
    "STORAGE_DRIVERS",
    "STORAGE_DRIVER_ENV",
    "Buildah",
    "ImageCommandError",
    "ImageToolMissing",
    "build_files",
    "require_tools",
    "storage_driver",
]

_TOOLS = ("buildah", "debootstrap")
_OUTPUT_TAIL = 4000
STORAGE_DRIVER_ENV = "KINETIC_IMAGES_STORAGE_DRIVER"
STORAGE_DRIVERS = ("overlay", "vfs")


class ImageToolMissing(RuntimeError):
    """``buildah`` or ``debootstrap`` is not installed; the message says how to get them."""


class ImageCommandError(RuntimeError):
    """A ``buildah`` command failed; the message carries its command and output's tail."""


def require_tools() -> None:
    """Raise :class:`ImageToolMissing` naming each missing tool and the command that installs it."""
    missing = [tool for tool in _TOOLS if shutil.which(tool) is None]
    if missing:
        raise ImageToolMissing(
            f"{' and '.join(missing)} not found on PATH: the image tier builds Kinetic's images "
            "with buildah from Debian-made base images. Install them as root: "
            "apt-get update && apt-get install -y buildah debootstrap"
        )


def storage_driver(root: Path) -> str:
    """The storage driver for a store under ``root``: ``$KINETIC_IMAGES_STORAGE_DRIVER`` when
    set, else ``overlay`` where buildah can use it there, else ``vfs``."""
    chosen = os.environ.get(STORAGE_DRIVER_ENV, "")
    if chosen:
        if chosen not in STORAGE_DRIVERS:
            raise ValueError(
                f"{STORAGE_DRIVER_ENV}={chosen!r} is not a storage driver the image tier uses: "
                f"set it to one of {', '.join(STORAGE_DRIVERS)}, or unset it to use overlay "
                "where this machine supports it"
            )
        return chosen
    return "overlay" if _overlay_works(root) else "vfs"


@functools.cache
def _overlay_works(root: Path) -> bool:
    """Whether buildah opens an overlay store under ``root`` (it mounts overlayfs to check)."""
    done = subprocess.run(
        Buildah(root, driver="overlay").command("info"), capture_output=True, check=False
    )
    return done.returncode == 0


class Buildah:
    """``buildah`` with a store of ``driver`` under ``root`` (one store per driver: a store
    written by one cannot be read by the other)."""

    def __init__(self, root: Path, *, driver: str | None = None) -> None:
        self.root = root
        self.driver = driver or storage_driver(root)

    def command(self, *args: str) -> list[str]:
        return [
            "buildah", "--root", str(self.root / f"storage-{self.driver}"),
            "--runroot", str(self.root / f"run-{self.driver}"),
            "--storage-driver", self.driver, *args,
        ]  # fmt: skip

    def run(self, *args: str, cwd: Path | None = None, timeout: float | None = None) -> str:
        """Run ``buildah ARGS``; its stdout, or :class:`ImageCommandError` with the output."""
        done = subprocess.run(
            self.command(*args), capture_output=True, text=True, check=False, cwd=cwd,
            timeout=timeout,
        )  # fmt: skip
        if done.returncode != 0:
            output = (done.stdout + done.stderr)[-_OUTPUT_TAIL:]
            raise ImageCommandError(
                f"buildah {' '.join(args[:3])} ... exited {done.returncode}:\n{output}"
            )
        return done.stdout

    def has_image(self, name: str) -> bool:
        done = subprocess.run(
            self.command("inspect", "--type", "image", "--format", "{{.FromImageID}}", name),
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        return done.returncode == 0

    def label(self, name: str, key: str) -> str:
        """The value of label ``key`` of image ``name`` ("" when absent or no such image)."""
        done = subprocess.run(
            self.command(
                "inspect", "--type", "image", "--format",
                f'{{{{index .OCIv1.Config.Labels "{key}"}}}}',
                name,
            ),
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        return done.stdout.strip() if done.returncode == 0 else ""

    def build(self, context_dir: Path, tag: str, *, log: Path) -> None:
        """``buildah bud`` the Dockerfile in ``context_dir`` as ``tag``, never pulling; the
        build's whole output goes to ``log`` (quoted, its tail, when the build fails)."""
        with log.open("w") as out:
            done = subprocess.run(
                self.command(
                    "bud", "--isolation", "chroot", "--pull=never", "--layers=false",
                    "-f", "Dockerfile", "-t", tag, ".",
                ),
                stdout=out, stderr=subprocess.STDOUT, cwd=context_dir, check=False,
            )  # fmt: skip
        if done.returncode != 0:
            tail = log.read_text(errors="replace")[-_OUTPUT_TAIL:]
            raise ImageCommandError(f"buildah bud of {tag} exited {done.returncode}:\n{tail}")

    def run_in_image(
        self,
        image: str,
        argv: Sequence[str],
        *,
        user: str = "",
        env: dict[str, str] | None = None,
        volumes: dict[Path, str] | None = None,
        timeout: float | None = None,
    ) -> subprocess.CompletedProcess[str]:
        """Run ``argv`` in a new container of ``image`` (host network), then remove it.

        The image's own ``ENV``, ``WORKDIR`` and ``USER`` apply; ``user`` overrides the user;
        ``volumes`` bind-mounts host directories (read-only) at container paths. The host's
        UTS namespace goes with its network, as for a ``hostNetwork`` pod: in one of its own
        the container's name is in no ``/etc/hosts``, and gloo (JAX's CPU collectives)
        cannot resolve the host name it listens on.
        """
        container = self.run("from", "--pull=never", image).strip()
        try:
            args = ["run", "--isolation", "chroot", "--network", "host", "--uts", "host"]
            if user:
                args += ["--user", user]
            for key, value in (env or {}).items():
                args += ["--env", f"{key}={value}"]
            for source, target in (volumes or {}).items():
                args += ["--volume", f"{source}:{target}:ro"]
            return subprocess.run(
                self.command(*args, container, "--", *argv),
                capture_output=True, text=True, check=False, timeout=timeout,
            )  # fmt: skip
        finally:
            self.run("rm", container)


def build_files(buildah: Buildah, files: dict[str, bytes], tag: str, *, workdir: Path) -> None:
    """Lay out a build context (relative path -> bytes, as Kinetic generates it) under
    ``workdir`` and build it as ``tag``; the build log is ``workdir/build.log``."""
    context = workdir / "context"
    for relative, data in files.items():
        path = context / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    buildah.build(context, tag, log=workdir / "build.log")
