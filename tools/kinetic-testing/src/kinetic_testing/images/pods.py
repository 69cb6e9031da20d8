"""Run a pod's container inside a locally built image: what the node agent's kubelet does for
an image this test session built (any other image still runs with this machine's Python).

The pod gets its own working container of the image (``buildah from``, then ``buildah mount``
for its root file system). Its command then runs through :mod:`kinetic_testing.enter_image`,
which enters a private mount namespace, binds the pod's volumes and ``/proc``, ``/dev`` and
``/sys`` into that root, ``chroot``s there, changes to the image's ``WORKDIR`` and becomes the
pod's user and group. The process stays in the kubelet's process group, so its kills, exit
codes and logs work as for any pod.
"""

from __future__ import annotations

import json
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .buildah import Buildah

__all__ = ["ImageConfig", "LocalImages", "PodContainer"]


@dataclass(frozen=True)
class ImageConfig:
    """What of an image's configuration a container starts from."""

    env: dict[str, str]
    workdir: str
    user: str


@dataclass(frozen=True)
class PodContainer:
    """A pod's working container: its name and where its root file system is mounted."""

    name: str
    rootfs: Path


class LocalImages:
    """Image references (as pods name them) of images built locally, and their local tags."""

    def __init__(self, buildah: Buildah) -> None:
        self.buildah = buildah
        self._tags: dict[str, str] = {}
        self._lock = threading.Lock()

    def add(self, reference: str, local_tag: str) -> None:
        with self._lock:
            self._tags[reference] = local_tag

    def get(self, reference: str) -> str | None:
        with self._lock:
            return self._tags.get(reference)

    def config(self, local_tag: str) -> ImageConfig:
        whole: dict[str, Any] = json.loads(
            self.buildah.run("inspect", "--type", "image", local_tag)
        )
        data: dict[str, Any] = (whole.get("OCIv1") or {}).get("config") or {}
        env = dict(item.partition("=")[::2] for item in data.get("Env") or [])
        return ImageConfig(env, str(data.get("WorkingDir") or "/"), str(data.get("User") or ""))

    def create(self, local_tag: str, name: str) -> PodContainer:
        """A new working container of ``local_tag`` named ``name``, its root mounted."""
        self.buildah.run("from", "--pull=never", "--name", name, local_tag)
        rootfs = Path(self.buildah.run("mount", name).strip())
        return PodContainer(name, rootfs)

    def remove(self, container: PodContainer) -> None:
        self.buildah.run("rm", container.name)


def enter_image_argv(
    container: PodContainer,
    argv: list[str],
    *,
    binds: list[dict[str, Any]],
    uid: int,
    gid: int,
    workdir: str,
    groups: list[int],
) -> list[str]:
    """The kubelet's command line that runs ``argv`` inside ``container`` (see the module) as
    ``uid``/``gid`` with supplementary ``groups`` (the pod's ``fsGroup``)."""
    plan = json.dumps(
        {"rootfs": str(container.rootfs), "binds": binds, "uid": uid, "gid": gid,
         "groups": groups, "workdir": workdir}
    )  # fmt: skip
    return [sys.executable, "-m", "kinetic_testing.enter_image", plan, "--", *argv]


def user_ids(pod: dict[str, Any], container: dict[str, Any], image_user: str) -> tuple[int, int]:
    """The uid and gid a container runs as: its ``securityContext``, then the pod's, then the
    image's numeric ``USER`` (0 when none: root, as a container runtime does)."""
    pod_context = pod["spec"].get("securityContext") or {}
    own = container.get("securityContext") or {}
    user, _, group = image_user.partition(":")
    uid = own.get("runAsUser", pod_context.get("runAsUser", int(user) if user.isdigit() else 0))
    gid = own.get("runAsGroup", pod_context.get("runAsGroup", int(group) if group.isdigit() else 0))
    return int(uid), int(gid)


def home_of(rootfs: Path, uid: int) -> str:
    """The home directory of ``uid`` in the image's ``/etc/passwd`` (``/`` if it has none), as
    a container runtime sets ``HOME``."""
    passwd = rootfs / "etc/passwd"
    for line in passwd.read_text(errors="replace").splitlines() if passwd.exists() else []:
        fields = line.split(":")
        if len(fields) >= 6 and fields[2] == str(uid):
            return fields[5] or "/"
    return "/"
