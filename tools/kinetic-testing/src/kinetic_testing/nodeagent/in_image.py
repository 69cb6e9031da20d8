"""The kubelet's start of a container inside its locally built image.

An image this test session built (see :mod:`kinetic_testing.images.pods`) runs as a container
runtime would run it: the image's ``ENV`` under the pod's own, its ``WORKDIR``, the user and
group of the ``securityContext`` (then the image's ``USER``), ``HOME`` from the image's
``/etc/passwd``, and the pod's volumes bound inside its root. Kept apart from
:mod:`.kubelet`, which owns the pod lifecycle and calls :meth:`InImageStarts.command`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from kinetic_testing.images.pods import LocalImages, enter_image_argv, home_of, user_ids

from .api import Kube, Obj
from .env import EnvError, container_env, expand
from .runtime import PodRuntime
from .volumes import fs_group, mount_plan

__all__ = ["InImageStarts"]

_HOST_KEYS = ("STORAGE_EMULATOR_HOST",)
"""Host environment a pod in an image keeps: how this machine reaches "GCS"."""


class InImageStarts:
    """Command lines that run a pod's container inside its image, and the working containers
    they need (one per pod, removed with the pod)."""

    def __init__(
        self,
        images: LocalImages,
        kube: Kube,
        host_env: Mapping[str, str],
        secret_data: Callable[[str, str], dict[str, str] | None],
        projected: Callable[[Obj, Obj], dict[str, str]],
    ) -> None:
        self.images = images
        self._kube = kube
        self._host_env = dict(host_env)
        self._secret_data = secret_data
        self._projected = projected

    def local_tag(self, container: Obj) -> str | None:
        """The local tag of the container's image, when this session built it."""
        return self.images.get(str(container.get("image", "")))

    def command(
        self, rt: PodRuntime, container: Obj, local_tag: str
    ) -> tuple[list[str], dict[str, str]]:
        """The argv and environment that run ``container`` of ``rt``'s pod in ``local_tag``.

        Raises :class:`~.env.EnvError` (the container's configuration is wrong) or
        :class:`~.volumes.MountError` (a volume is not ready yet), as the host start does.
        """
        pod = rt.pod
        config = self.images.config(local_tag)
        if rt.image_container is None:
            rt.image_container = self.images.create(
                local_tag, f"kinetic-pod-{pod['metadata']['uid']}"
            )
        uid, gid = user_ids(pod, container, config.user)
        base = {**config.env, "HOME": home_of(rt.image_container.rootfs, uid)}
        base.update({key: self._host_env[key] for key in _HOST_KEYS if key in self._host_env})
        view = {**pod, "status": {**(pod.get("status") or {}), "podIP": rt.pod_ip}}
        env = container_env(
            view, container, base, self._kube.service_env(), self._kube.secret_value,
            self._kube.config_map_value, self._kube.config_map_data,
        )  # fmt: skip
        argv = [expand(str(a), env) for a in (container.get("command") or [])]
        argv += [expand(str(a), env) for a in (container.get("args") or [])]
        if not argv:
            raise EnvError("container has no command: the node agent runs no image entrypoint")
        binds = mount_plan(pod, container, rt.directory, self._secret_data, self._projected)
        argv = enter_image_argv(
            rt.image_container, argv, binds=binds, uid=uid, gid=gid, workdir=config.workdir,
            groups=[group] if (group := fs_group(pod)) is not None else [],
        )  # fmt: skip
        return argv, env

    def remove(self, rt: PodRuntime) -> None:
        """Remove the pod's working container, if it has one."""
        if rt.image_container is not None:
            container, rt.image_container = rt.image_container, None
            self.images.remove(container)
