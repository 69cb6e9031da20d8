"""The interface every backend implements, and the settings it is built from.

A backend receives fully prepared :class:`~kinetic_protocol.records.JobRecord` objects whose
artifacts are already in the store; it never sees a user callable. Backends are found through
the ``kinetic.backends`` entry-point group, whose entries are :data:`BackendFactory` callables.
"""

from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from types import MappingProxyType
from typing import Literal, Protocol

import msgspec

from kinetic_protocol.accelerators import Accelerator
from kinetic_protocol.batch import BatchManifest
from kinetic_protocol.records import JobRecord
from kinetic_protocol.settings import ResolvedSetting, SettingSpec, resolve_declared
from kinetic_protocol.signing import Keyring
from kinetic_protocol.status import JobState

__all__ = [
    "ENTRY_POINT_GROUP",
    "NO_ENV",
    "Backend",
    "BackendFactory",
    "BackendSettings",
    "ArrayBackend",
    "Capabilities",
    "HostSelection",
    "Preparation",
    "PrepareRequest",
    "array_runtime_args",
    "runtime_args",
]

ENTRY_POINT_GROUP = "kinetic.backends"

NO_ENV: Mapping[str, str] = MappingProxyType({})
"""``submit``'s ``env`` when nothing was captured."""

HostSelection = int | Literal["all"] | None
"""Whose output ``logs``/``follow_logs`` return on a multi-host job: the leader (None or 0),
host ``i``, or every host interleaved, each line prefixed ``[host i]`` (``"all"``)."""


class BackendSettings(msgspec.Struct, frozen=True, kw_only=True):
    """Resolved settings (argument > env > profile > default) a backend is built from."""

    project: str = ""
    zone: str = ""
    cluster: str = ""
    namespace: str = "default"
    store_uri: str | None = None
    """Override of the backend's own default store (``KINETIC_STORE``)."""
    build_service_account: str = ""
    """The account a backend that builds images builds them as (``KINETIC_BUILD_SERVICE_ACCOUNT``
    or the profile ``kinetic up`` wrote); empty: the build service's default."""
    declared: tuple[ResolvedSetting, ...] = ()
    """The backend's own ``declared_settings``, resolved (with where each value came from) by
    the client just before it builds the backend. The client reuses a built backend only for
    equal settings, so a variable changed between calls builds a fresh one."""

    def environ(self, specs: Sequence[SettingSpec]) -> dict[str, str]:
        """The variables of ``specs`` that were set, as ``declared`` resolved them; one it did
        not resolve (a backend built directly, not by the client) is read now. A backend reads
        its settings from this once, when it is built (``SPEC.value(environ)``)."""
        given = {setting.env: setting for setting in self.declared}
        found = [given.get(spec.env) or resolve_declared((spec,))[0] for spec in specs]
        return {
            setting.env: setting.value
            for setting in found
            if setting.source == "env" and setting.value is not None
        }

    @classmethod
    def for_record(cls, record: JobRecord) -> "BackendSettings":
        """The settings of the cluster and store a stored job belongs to."""
        return cls(
            project=record.project,
            zone=record.zone,
            cluster=record.cluster_name,
            namespace=record.namespace,
            store_uri=record.store_uri,
        )


class Capabilities(msgspec.Struct, frozen=True, kw_only=True):
    """What a backend needs and can do. The client reads these; it never asks for a name."""

    container_image: bool = False
    """Jobs run from a container image. The backend resolves it in ``prepare`` from the user's
    ``container_image=`` choice (:attr:`PrepareRequest.container_image`); the client only
    passes the choice down and stores what ``prepare`` returns."""
    local_data: bool = False
    """Jobs see this machine's files, so the backend stages local ``Data`` itself: the job
    reads it in place. Without it, the client uploads local data to the store first."""
    multi_host: bool = False
    """Runs accelerators whose slice spans several hosts."""
    single_host: bool = True
    """Runs accelerators that fit one host (and CPU jobs)."""
    volumes: bool = False
    """``volumes={path: Data}``: the job sees each ``Data`` at exactly that absolute path."""
    fuse: bool = False
    """``Data(..., fuse=True)`` in ``gs://`` (or uploaded to a ``gs://`` store) is mounted
    lazily with GCS FUSE; without it, such data is staged up front like any other."""
    debug_port_forward: bool = False
    per_host_logs: bool = False
    provisions_accelerators: bool = True
    """False: jobs run on whatever hardware the backend's machine has (the client says so)."""
    host_groups: bool = False
    """Runs a job on several nodes or TPU slices (``nodes``/``slices`` above 1), one runtime
    per host with the variables ``kinetic_runtime.host_place`` describes. The client
    refuses such a job for a backend without it, once ``prepare`` has run (which may refuse
    it first, saying more)."""
    capacity_choices: bool = False
    """Takes ``accelerator=`` as a list and ``capacity=`` as a list or as a kind other than
    on-demand and spot (``reservation:<name>``, ``flex-start``). The client refuses those for a
    backend without it, once ``prepare`` has run (which may refuse them first, saying more)."""
    array_batches: int = 0
    """The most inputs one array object holds (:class:`ArrayBackend`): one create submits
    them all, and the backend retries each input itself; a larger batch is split into
    several objects of at most that many (``BatchManifest.array_part_size``). 0: no arrays,
    one job per input."""


class PrepareRequest(msgspec.Struct, frozen=True, kw_only=True):
    """What a backend may need to know before the first job of a call or batch is written."""

    accelerator: Accelerator
    project_root: Path
    isolate: bool = False
    spot: bool = False
    container_image: str | None = None
    """The user's ``container_image=`` (None: the backend's default), for a backend that
    declares ``container_image``: for Kinetic's, ``"bundled"``, ``"prebuilt"`` or a URI."""
    base_image_repo: str | None = None
    """The user's ``base_image_repo=`` (None: the backend's default)."""
    runtime_extras: tuple[str, ...] = ()
    """Extras of ``kinetic-runtime`` the jobs need (``"hf"`` when a call passes ``hf://``
    data), for the image to hold."""
    volumes: tuple[str, ...] = ()
    """The absolute paths of the decorator's ``volumes=``, for a backend to refuse early."""
    fuse: bool = False
    """Whether some of the decorator's volumes are FUSE mounts (arguments are only known at
    each call; a backend checks those in ``submit``)."""
    queue: str | None = None
    """``queue=`` (None: the backend's default queue). A backend with queues refuses one it
    does not have here, naming those it has."""
    priority: str | None = None
    """``priority=``, a priority class name (None: none). Refused here when unknown, naming
    the classes that exist."""
    nodes: int = 1
    """``nodes=``: hosts of the accelerator the job runs on (checked against it already)."""
    slices: int = 1
    """``slices=``: TPU slices the job runs on. A backend that cannot run a job of several
    nodes or slices refuses it here, saying where it can run."""
    fallback_accelerators: tuple[Accelerator, ...] = ()
    """``accelerator=`` given as a list: the entries after ``accelerator``, in order of
    preference, of its family (checked already). A backend that cannot fall back refuses
    them here, saying why and what to do."""
    capacity: tuple[str, ...] = ()
    """``capacity=``: the kinds of capacity in order (checked already; empty: ``on-demand``,
    or ``spot`` where ``spot`` is set). A backend refuses a kind it cannot give here."""


class Preparation(msgspec.Struct, frozen=True, kw_only=True):
    """A backend's answer to `prepare`: data it wants kept in each job's record."""

    backend_data: dict[str, str] = msgspec.field(default_factory=dict)
    image: str = ""
    """The image its jobs run (``JobRecord.image_uri``); empty without ``container_image``."""
    requirements: tuple[str, ...] = ()
    """Requirement lines each job installs when it starts (``CallDescriptor.requirements``):
    a prebuilt image's."""
    queue: str = ""
    """The queue the jobs will be admitted through (``JobRecord.queue``): the one asked for or
    the backend's default; empty where the backend has no queues."""


class Backend(Protocol):
    """Runs prepared jobs and reports on them. Every method is safe to repeat.

    The object registered in the ``kinetic.backends`` entry-point group is the backend class
    (or any factory): called with :class:`BackendSettings` it builds the backend, and its
    ``capabilities`` and ``declared_settings`` attributes are read without building one.
    """

    capabilities: Capabilities
    declared_settings: tuple[SettingSpec, ...]

    @property
    def name(self) -> str: ...

    @property
    def store_uri(self) -> str:
        """The store this backend's jobs keep their artifacts in."""
        ...

    @property
    def poll_bounds(self) -> tuple[float, float]:
        """Shortest and longest sensible wait between status polls, in seconds."""
        ...

    def prepare(self, request: PrepareRequest) -> Preparation:
        """Get ready to run jobs for one call or batch (before anything is written); raise a
        ConfigError for what cannot run here."""
        ...

    def signing_keys(self, *, create: bool, refresh: bool = False) -> Keyring:
        """The keyring that signs this backend's calls and verifies what its jobs write, and
        that its jobs can read. ``create``: make it if there is none (a submission); a reader
        never creates one. A backend may keep it in memory; ``refresh`` reads it again (the
        client asks when an object names a key it does not know: a rotation elsewhere).
        Raises ``SigningKeyError`` when it is out of this caller's reach."""
        ...

    def replace_signing_keys(self, keyring: Keyring) -> None:
        """Store a rotated keyring (``Keyring.rotated`` / ``without``) as this backend's."""
        ...

    def submit(self, record: JobRecord, *, env: Mapping[str, str] = NO_ENV) -> None:
        """Start the job. "Already exists" for the same job id is success, not a duplicate.

        ``env`` holds the values of the job's captured variables (``capture_env_vars``; their
        names are in the stored call). They are secrets until proven otherwise: the backend
        hands them to the job's processes through a channel only they can read (a Kubernetes
        Secret, a private file), never through the store, and sets nothing else of this
        machine's environment.
        """
        ...

    def statuses(self, records: Sequence[JobRecord]) -> dict[str, JobState]:
        """The state of each job, keyed by job id, from one backend call where possible."""
        ...

    def logs(
        self, record: JobRecord, *, tail: int | None = None, host: HostSelection = None
    ) -> str:
        """The job's output so far (the last ``tail`` lines when given). ``host`` is passed
        only to backends that declare ``per_host_logs``."""
        ...

    def follow_logs(self, record: JobRecord, *, host: HostSelection = None) -> Iterator[str]:
        """Yield output lines as they appear until the job ends."""
        ...

    def delete(self, record: JobRecord, *, timeout: float, poll_interval: float) -> None:
        """Stop the job if running and remove its backend resource; confirm within ``timeout``."""
        ...

    def list_job_ids(self) -> list[str]:
        """Ids of the jobs this backend still holds a resource for."""
        ...


class ArrayBackend(Backend, Protocol):
    """A backend that declares ``array_batches``: a whole batch is one object of its own.

    Each input is one index of that object, a Kinetic job all the same: its id is the
    manifest's ``child_job_id(index, attempt)`` and its record ``child_record(index,
    attempt)`` (with ``in_array`` set), so ``statuses``, ``logs`` and ``delete`` answer for it
    as for any job. The backend runs a failed index again as the next attempt, whose run
    writes its child record; ``statuses`` names it in the earlier attempt's state
    (``JobState.next_attempt``).
    """

    def submit_array(self, manifest: BatchManifest, *, env: Mapping[str, str] = NO_ENV) -> None:
        """Create the batch's array object: every input at once, ``max_concurrent`` running,
        each retried by the backend within ``retries``; fail-fast stops every index.
        "Already exists" is success (a resumed submission)."""
        ...

    def delete_array(
        self, manifest: BatchManifest, *, timeout: float, poll_interval: float
    ) -> None:
        """Stop every index still running and remove the array object; confirm within
        ``timeout``."""
        ...


BackendFactory = Callable[[BackendSettings], Backend]


def runtime_args(record: JobRecord) -> list[str]:
    """The arguments of ``python -m kinetic_runtime`` for ``record``, whatever runs it.

    A batch child names its batch and input: it runs the batch's stored call, not one of its
    own.
    """
    args = ["--store", record.store_uri, "--job", record.job_id]
    if record.group_id is not None and record.group_index is not None:
        args += ["--group", record.group_id, "--index", str(record.group_index)]
    return args


def array_runtime_args(manifest: BatchManifest, index_variable: str, part: int = 0) -> list[str]:
    """The arguments of ``python -m kinetic_runtime`` for every index of array object
    ``part`` of a batch: the same as each child's own (:func:`runtime_args`), with the index
    read from the environment variable ``index_variable`` (``$(NAME)``, which Kubernetes
    expands in a container's args). A part after the first adds where its inputs start
    (``--index-offset``): the runtime adds it to the index, and to the number ending the id."""
    record = manifest.job_template
    index = f"$({index_variable})"
    args = [
        "--store",
        record.store_uri,
        "--job",
        f"{manifest.job_id_prefix}-{index}",
        "--group",
        manifest.group_id,
        "--index",
        index,
    ]
    offset = manifest.array_part_inputs(part).start
    return [*args, "--index-offset", str(offset)] if offset else args
