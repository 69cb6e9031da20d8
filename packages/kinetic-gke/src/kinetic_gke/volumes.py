"""The pod volumes a job's ``Mount``s become: a pure function of the record, like the manifest.

A ``scratch`` mount is an ``emptyDir`` the runtime fills (a volume's download target); a
``gcsfuse`` mount is a read-only ephemeral CSI volume of GKE's Cloud Storage FUSE driver,
scoped to one directory of a bucket (``only-dir``), and the pod carries the annotation that
makes GKE inject the driver's sidecar.
"""

from typing import Any

from kinetic_protocol import ConfigError, Mount
from kinetic_protocol.data import FUSE_ARGUMENT_ROOT, GCSFUSE_DRIVER, check_volume_path

__all__ = ["FUSE_ANNOTATION", "PodVolumes", "pod_volumes"]

FUSE_ANNOTATION = "gke-gcsfuse/volumes"
"""GKE injects the gcsfuse sidecar into pods annotated ``"true"``."""

PodVolumes = tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, str]]
"""``(pod volumes, container volumeMounts, pod annotations)``."""


def _checked(mount: Mount) -> str:
    """A mount's path must be one a volume may use (Kinetic's own FUSE argument mounts too)."""
    if mount.path.startswith(FUSE_ARGUMENT_ROOT + "/"):
        return mount.path
    try:
        return check_volume_path(mount.path)
    except ConfigError as exc:
        raise ConfigError(
            f"Kubernetes would have to mount {mount.path} for this job's volumes (a single "
            f"file's volume mounts its directory): {exc}"
        ) from None


def _source(mount: Mount) -> dict[str, Any]:
    if mount.kind == "scratch":
        return {"emptyDir": {}}
    options = "implicit-dirs" + (f",only-dir={mount.prefix}" if mount.prefix else "")
    attributes = {"bucketName": mount.bucket, "mountOptions": options}
    return {"csi": {"driver": GCSFUSE_DRIVER, "readOnly": True, "volumeAttributes": attributes}}


def pod_volumes(mounts: list[Mount]) -> PodVolumes:
    """Volumes, volume mounts and pod annotations for ``mounts`` (named ``kinetic-data-<i>``)."""
    volumes: list[dict[str, Any]] = []
    volume_mounts: list[dict[str, Any]] = []
    for number, mount in enumerate(mounts):
        name = f"kinetic-data-{number}"
        volumes.append({"name": name, **_source(mount)})
        volume_mounts.append(
            {"name": name, "mountPath": _checked(mount), "readOnly": mount.kind == "gcsfuse"}
        )
    fuse = any(mount.kind == "gcsfuse" for mount in mounts)
    return volumes, volume_mounts, {FUSE_ANNOTATION: "true"} if fuse else {}
