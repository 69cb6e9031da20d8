"""A pod's volumes, as the kubelet role mounts them: ``emptyDir``, ``secret`` and ``projected``
(the service-account token volume the API server adds to every pod) for real, CSI not at all.

An ``emptyDir`` is a directory of the pod's own (under the agent's pod directory), bind-mounted
at each of the container's ``mountPath``s in a private mount namespace of the pod's process
(the runtime's :mod:`kinetic_runtime.data.namespace`, the code local jobs use for their
volumes), so the process sees ``/data`` while nothing is written to this machine's ``/``. A
``secret`` volume is a directory of the Secret's keys as files (``defaultMode``, group-owned by
the pod's ``fsGroup``), made when the container starts and mounted read-only; a missing Secret
keeps the pod ``ContainerCreating`` with the kubelet's message, until it exists.

No CSI driver is registered with this kubelet, so a pod with a CSI volume (GCS FUSE) stays
``ContainerCreating`` with the message a kubelet without that driver gives; tests of FUSE
check the manifests the API server accepted, not a mount.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["MountError", "fs_group", "mount_plan", "wrap_argv"]

Obj = dict[str, Any]


class MountError(Exception):
    """A volume this kubelet cannot mount; the pod waits with this message."""


SecretData = Callable[[str, str], dict[str, str] | None]
"""(namespace, name) -> the Secret's decoded data, or None if it does not exist."""
Projected = Callable[[Obj, Obj], dict[str, str]]
"""(pod, a ``projected`` volume source) -> its files' contents by relative path."""


def _secret_files(pod: Obj, name: str, source: Obj, directory: Path, secrets: SecretData) -> Path:
    ns = pod["metadata"]["namespace"]
    data = secrets(ns, source["secretName"])
    if data is None:
        raise MountError(
            f'MountVolume.SetUp failed for volume "{name}" : secret "{source["secretName"]}" '
            "not found"
        )
    target = directory / "volumes" / name
    target.mkdir(parents=True, exist_ok=True)
    mode = int(source.get("defaultMode", 0o644))
    group = fs_group(pod)
    for key, value in data.items():
        path = target / key
        path.write_text(value)
        path.chmod(mode)
        if group is not None:  # the kubelet gives the pod's fsGroup the volume's files
            os.chown(path, -1, group)
    return target


def fs_group(pod: Obj) -> int | None:
    """The pod's ``fsGroup``, where this kubelet can apply it (as root; a pod run as a local
    process by an unprivileged agent keeps the agent's group)."""
    group = (pod["spec"].get("securityContext") or {}).get("fsGroup")
    return int(group) if group is not None and os.geteuid() == 0 else None


def _projected_files(name: str, files: dict[str, str], directory: Path) -> Path:
    target = directory / "volumes" / name
    for relative, text in files.items():
        path = target / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        path.chmod(0o644)
    return target


def mount_plan(
    pod: Obj,
    container: Obj,
    directory: Path,
    secrets: SecretData | None = None,
    projected: Projected | None = None,
) -> list[dict[str, Any]]:
    """The binds for ``container``'s volume mounts (``source``, ``target``, ``read_only``)."""
    volumes = {v["name"]: v for v in pod["spec"].get("volumes") or []}
    binds: list[dict[str, Any]] = []
    for mount in container.get("volumeMounts") or []:
        volume = volumes.get(mount["name"], {})
        if "csi" in volume:
            driver = volume["csi"].get("driver", "")
            raise MountError(
                f"MountVolume.SetUp failed for volume {mount['name']!r} : kubernetes.io/csi: "
                f"mounter.SetUpAt failed to get CSI client: driver name {driver} not found in "
                "the list of registered CSI drivers"
            )
        if "secret" in volume and secrets is not None:
            source = _secret_files(pod, mount["name"], volume["secret"], directory, secrets)
            binds.append({"source": str(source), "target": mount["mountPath"], "read_only": True})
            continue
        if "projected" in volume and projected is not None:
            files = projected(pod, volume["projected"])
            source = _projected_files(mount["name"], files, directory)
            binds.append({"source": str(source), "target": mount["mountPath"], "read_only": True})
            continue
        if "emptyDir" not in volume:
            continue  # configMap...: not used by Kinetic's pods
        source = directory / "volumes" / mount["name"]
        source.mkdir(parents=True, exist_ok=True)
        source.chmod(0o777)  # as the kubelet makes an emptyDir: any container user may write
        binds.append(
            {"source": str(source), "target": mount["mountPath"],
             "read_only": bool(mount.get("readOnly"))}
        )  # fmt: skip
    return binds


def wrap_argv(argv: list[str], binds: list[dict[str, Any]], directory: Path) -> list[str]:
    """``argv`` run inside a private mount namespace with ``binds`` (unchanged without)."""
    if not binds:
        return argv
    workspace = directory / "mount-staging"
    workspace.mkdir(parents=True, exist_ok=True)
    plan = json.dumps({"binds": binds, "workspace": str(workspace)})
    return [sys.executable, "-m", "kinetic_testing.enter_mounts", plan, "--", *argv]
