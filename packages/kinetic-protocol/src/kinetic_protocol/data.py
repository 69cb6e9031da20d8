"""How a call's ``kinetic.Data`` travels: what the client records, what the runtime stages and
what a backend must mount, plus the URI and path rules all three apply alike.

A ``Data`` never reaches the job as an object. The client pickles each one as a persistent id
``("kinetic.data", i)`` (:data:`PERSISTENT_ID_TAG`) and lists it as ``CallDescriptor.data[i]``
(a :class:`DataSpec`); the runtime stages every entry, then unpickles the call with each id
replaced by the staged ``str`` path. Where it appears (an argument, nested in containers, a
closure, a global) does not matter, and one object used twice is one entry, staged once.
"""

import posixpath
from typing import Literal
from urllib.parse import parse_qsl, urlsplit

import msgspec

from kinetic_protocol.errors import ConfigError

__all__ = [
    "FUSE_ARGUMENT_ROOT",
    "GCSFUSE_DRIVER",
    "HF_QUERY_KEYS",
    "PERSISTENT_ID_TAG",
    "RESERVED_ROOT",
    "DataSource",
    "DataSpec",
    "GcsLocation",
    "HfDataset",
    "Mount",
    "MountKind",
    "Volume",
    "check_volume_path",
    "fuse_argument_path",
    "mount_for",
    "parse_gcs_uri",
    "parse_hf_uri",
]

PERSISTENT_ID_TAG = "kinetic.data"
"""First element of the pickle persistent id that stands for ``CallDescriptor.data[i]``."""

RESERVED_ROOT = "/kinetic"
"""Kinetic's own directory in a job's filesystem; volumes may not use it."""
FUSE_ARGUMENT_ROOT = f"{RESERVED_ROOT}/fuse"
"""Where FUSE-mounted ``Data`` arguments appear on Kubernetes: ``/kinetic/fuse/<i>``."""
GCSFUSE_DRIVER = "gcsfuse.csi.storage.gke.io"
"""The CSI driver of GKE's Cloud Storage FUSE add-on."""

DataSource = Literal["local", "stored", "gcs", "hf"]
MountKind = Literal["scratch", "gcsfuse"]
HF_QUERY_KEYS = ("split", "config_name", "revision")

# A volume may sit inside these (e.g. /tmp/data), but may not replace them whole: the job's
# interpreter, libraries, temporary files and home directories live there.
_SYSTEM_DIRS = frozenset(
    "/" + name
    for name in [
        "bin",
        "boot",
        "etc",
        "home",
        "lib",
        "lib32",
        "lib64",
        "opt",
        "root",
        "run",
        "sbin",
        "srv",
        "tmp",
        "usr",
        "var",
    ]
)
# Nothing may be mounted in or under these: the kernel's own filesystems, and Kinetic's root.
_RESERVED_TREES = ("/proc", "/sys", "/dev", RESERVED_ROOT)


class DataSpec(msgspec.Struct, frozen=True, kw_only=True):
    """One ``kinetic.Data`` of a call, as the runtime stages it (``CallDescriptor.data[i]``).

    ``source`` says where the bytes are and ``uri`` where exactly:

    * ``local``: an absolute path on the machine that submitted, which the job can see (the
      backend declares ``local_data``); read in place, never copied.
    * ``stored``: a copy of local data in the jobs store, at the key prefix ``uri``
      (``data/<sha256>/files/``, see :mod:`kinetic_protocol.layout`).
    * ``gcs``: a ``gs://`` object, or a prefix when ``uri`` ends with ``/``.
    * ``hf``: a Hugging Face dataset, ``hf://repo[?split=..&config_name=..&revision=..]``.
    """

    source: DataSource
    uri: str
    is_dir: bool
    name: str = ""
    """A single file's name: the path the job receives ends with it."""
    fuse: bool = False
    """Mount lazily (GCS FUSE) where the backend can; else staged up front."""
    hf_trust_remote_code: bool = False
    label: str = ""
    """The data as the user named it (a path or URI), for messages."""


class Volume(msgspec.Struct, frozen=True, kw_only=True):
    """``volumes={path: Data}``: ``CallDescriptor.data[data]`` appears at ``path``."""

    path: str
    data: int


class Mount(msgspec.Struct, frozen=True, kw_only=True):
    """A directory a Kubernetes backend provides in the pod before the runtime starts.

    ``scratch``: an empty writable directory the runtime fills (a volume's download target).
    ``gcsfuse``: ``gs://bucket/prefix/`` mounted read-only through GCS FUSE.
    """

    path: str
    kind: MountKind
    bucket: str = ""
    prefix: str = ""
    """The directory inside ``bucket`` that is mounted, without slashes at either end
    (``""``: the whole bucket)."""


class GcsLocation(msgspec.Struct, frozen=True):
    """``gs://bucket/name``: one object, or every object under ``name`` when it ends in ``/``."""

    bucket: str
    name: str

    @property
    def is_prefix(self) -> bool:
        return self.name == "" or self.name.endswith("/")

    @property
    def uri(self) -> str:
        return f"gs://{self.bucket}/{self.name}"


class HfDataset(msgspec.Struct, frozen=True, kw_only=True):
    """``hf://repo?split=..&config_name=..&revision=..``, parsed."""

    repo: str
    split: str | None = None
    config_name: str | None = None
    revision: str | None = None


def parse_gcs_uri(uri: str) -> GcsLocation:
    """Split ``gs://bucket/name``; a ConfigError names what is wrong with a malformed one."""
    if not uri.startswith("gs://"):
        raise ConfigError(f"{uri!r} is not a gs:// URI; expected gs://BUCKET/OBJECT or PREFIX/.")
    bucket, _, name = uri.removeprefix("gs://").partition("/")
    if not bucket:
        raise ConfigError(f"{uri!r} names no bucket; expected gs://BUCKET/OBJECT or PREFIX/.")
    if "//" in name or any(part in (".", "..") for part in name.split("/")):
        raise ConfigError(
            f"{uri!r} has an empty, '.' or '..' path segment; GCS names are taken literally, "
            "so write the object name exactly as it is stored."
        )
    return GcsLocation(bucket, name)


def parse_hf_uri(uri: str) -> HfDataset:
    """Parse ``hf://repo[?split=..&config_name=..&revision=..]``; unknown keys are refused."""
    parts = urlsplit(uri)
    if parts.scheme != "hf":
        raise ConfigError(f"{uri!r} is not an hf:// URI; expected hf://REPO[?split=...].")
    repo = (parts.netloc + parts.path).strip("/")
    if not repo or repo.count("/") > 1 or parts.fragment:
        raise ConfigError(
            f"{uri!r} does not name a dataset repository; expected hf://NAME or hf://OWNER/NAME, "
            "optionally with ?split=...&config_name=...&revision=..."
        )
    query: dict[str, str] = {}
    for key, value in parse_qsl(parts.query, keep_blank_values=True):
        if key not in HF_QUERY_KEYS:
            raise ConfigError(
                f"{uri!r}: unknown query key {key!r}; the keys are {', '.join(HF_QUERY_KEYS)}."
            )
        if key in query or not value:
            raise ConfigError(f"{uri!r}: {key!r} must be given once, with a value.")
        query[key] = value
    return HfDataset(repo=repo, **query)


def check_volume_path(path: str) -> str:
    """The normalised form of a volume's mount path; ConfigError if it cannot be one.

    It must be absolute and plain (no ``..``), and not replace a system directory whole
    (``/usr``, ``/tmp``...) or reach into ``/proc``, ``/sys``, ``/dev`` or Kinetic's
    ``/kinetic``.
    """
    if not path.startswith("/"):
        raise ConfigError(f"volumes key {path!r} must be an absolute mount path, such as '/data'.")
    normal = posixpath.normpath(path)
    if normal.startswith("//"):
        normal = "/" + normal.lstrip("/")
    if ".." in path.split("/"):
        raise ConfigError(f"volumes key {path!r} contains '..'; write the path itself ({normal}).")
    if normal == "/":
        raise ConfigError(
            "volumes key '/' would replace the job's whole filesystem; use e.g. /data."
        )
    reserved = [root for root in _RESERVED_TREES if normal == root or normal.startswith(root + "/")]
    if reserved:
        owner = "Kinetic" if reserved[0] == RESERVED_ROOT else "the kernel"
        raise ConfigError(
            f"volumes key {path!r} is inside {reserved[0]}, which is reserved ({owner}'s own); "
            "use e.g. /data."
        )
    if normal in _SYSTEM_DIRS:
        raise ConfigError(
            f"volumes key {path!r} would hide the system directory {normal} from the job; mount "
            f"below it (e.g. {normal}/data) or elsewhere (e.g. /data)."
        )
    return normal


def fuse_argument_path(index: int) -> str:
    """The mount point of ``CallDescriptor.data[index]`` when it is a FUSE-mounted argument."""
    return f"{FUSE_ARGUMENT_ROOT}/{index}"


def mount_for(spec: DataSpec, path: str, store_uri: str) -> Mount:
    """The mount a Kubernetes backend provides for ``spec`` at ``path`` (a directory).

    FUSE data mounts its directory (a single object: the directory holding it, where the job
    finds it by name); everything else gets a scratch directory the runtime fills.
    """
    if not spec.fuse or spec.source not in ("gcs", "stored"):
        return Mount(path=path, kind="scratch")
    if spec.source == "stored":
        location = parse_gcs_uri(store_uri.rstrip("/") + "/" + spec.uri)
    else:
        location = parse_gcs_uri(spec.uri)
    directory = location.name if location.is_prefix else posixpath.dirname(location.name)
    return Mount(path=path, kind="gcsfuse", bucket=location.bucket, prefix=directory.strip("/"))
