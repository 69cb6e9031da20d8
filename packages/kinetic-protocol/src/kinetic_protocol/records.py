"""Every record that crosses a process or machine boundary, as versioned msgspec structs.

Evolution rules: new fields get defaults, nothing is renamed or removed within a major
``schema_version``, and readers ignore fields they do not know (no ``forbid_unknown_fields``).
Records are JSON so a person can read them in a bucket; the result envelope is msgpack because
it carries pickled bytes.
"""

from typing import Any, Literal, TypeVar

import msgspec

from kinetic_protocol.data import DataSpec, Mount, Volume
from kinetic_protocol.errors import CorruptRecordError, SchemaVersionError

__all__ = [
    "SCHEMA_VERSION",
    "ArtifactRef",
    "CallDescriptor",
    "DataManifest",
    "DEFAULT_DEBUG_PORT",
    "DebugOptions",
    "DebugPhase",
    "DebugState",
    "HostStart",
    "Failed",
    "InputChunk",
    "JobRecord",
    "PickledInput",
    "ResultEnvelope",
    "Succeeded",
    "decode_inputs",
    "decode_json",
    "decode_result",
    "encode_inputs",
    "encode_json",
    "encode_result",
]

SCHEMA_VERSION = 1
"""The schema version this package writes. Readers accept this or older."""


DEFAULT_PREEMPTION_RETRIES = 3
"""How many times a preempted attempt of a job is run again, in place (same job id, same
``KINETIC_OUTPUT_DIR``), before the job fails with cause ``preempted``. Separate from a
batch's ``retries``, which such runs do not spend."""


class JobRecord(msgspec.Struct, kw_only=True, gc=False):
    """The durable handle of one job, stored at ``layout.job_record_key``.

    The first fields are exactly the public ``JobHandle`` fields of the API reference. The
    store a job lives in is ``bucket_name`` if it holds a URI (``file:///...``), else
    ``gs://{bucket_name}``.
    """

    job_id: str
    backend: str
    project: str
    cluster_name: str
    zone: str
    namespace: str
    bucket_name: str
    k8s_name: str
    image_uri: str
    accelerator: str
    func_name: str
    display_name: str
    created_at: str
    group_id: str | None = None
    group_kind: str | None = None
    group_index: int | None = None
    debug: bool = False
    # Protocol extras; not part of the public handle signature.
    schema_version: int = SCHEMA_VERSION
    attempt: int = 0
    spot: bool = False
    kinetic_version: str = ""
    backend_data: dict[str, str] = msgspec.field(default_factory=dict)
    """What the backend's `prepare` asked to keep with the job (e.g. the local backend's
    isolated interpreter); only that backend reads it."""
    output_dir: str = ""
    """``output_dir=`` of the decorator; empty for the default, ``<store>/outputs/<job_id>``."""
    timeout: float | None = None
    """``timeout=`` of the decorator: seconds each attempt may run before the backend stops
    it (cause ``timeout``); None: no limit."""
    preemption_retries: int = DEFAULT_PREEMPTION_RETRIES
    """``preemption_retries=`` of the decorator: how many times the backend runs a preempted
    attempt again in place (same job id and output directory) before the job fails."""
    mounts: list[Mount] = msgspec.field(default_factory=list)
    """Directories a Kubernetes backend mounts in the pod for the call's ``Data`` (volumes,
    FUSE); set per call at submission, so a batch's template carries none."""
    in_array: bool = False
    """One index (``group_index``) of its batch's array object, ``k8s_name``, which its
    siblings share (``Capabilities.array_batches``): the backend reads its state there."""
    queue: str = ""
    """The queue the job was admitted through (``queue=``, or the backend's default queue);
    empty where the backend has none."""
    priority: str = ""
    """``priority=``: the priority class the job was submitted with; empty for none."""
    array_offset: int = 0
    """The first input of that array object (a batch split into several holds input
    ``group_index`` at index ``group_index - array_offset`` of its object)."""
    nodes: int = 1
    """``nodes=`` of the decorator: hosts of a GPU or CPU accelerator the job runs on."""
    slices: int = 1
    """``slices=`` of the decorator: TPU slices the job runs on (multislice). A record
    written before these fields existed reads as one node and one slice; the job's hosts
    are ``kinetic_protocol.host_groups.job_hosts``."""
    fallback_accelerators: list[str] = msgspec.field(default_factory=list)
    """``accelerator=`` given as a list: the entries after the first (``accelerator``), in
    order of preference, of the first's family (``kinetic_protocol.capacity``)."""
    capacity: list[str] = msgspec.field(default_factory=list)
    """``capacity=``: the kinds of capacity in order (``on-demand``, ``spot``,
    ``reservation:<name>``, ``flex-start``). Empty in a record written before it existed,
    which reads as ``spot`` where ``spot`` is set, else ``on-demand``
    (``kinetic_protocol.capacity.record_capacity``)."""
    max_run_duration: int = 0
    """``max_run_duration=``: the seconds a flex-start run may hold its nodes; 0: GKE's
    default (7 days)."""

    @property
    def store_uri(self) -> str:
        """URI of the object store holding this job's artifacts."""
        return self.bucket_name if "://" in self.bucket_name else f"gs://{self.bucket_name}"


class ArtifactRef(msgspec.Struct, frozen=True, kw_only=True):
    """A stored blob and the sha256 the runtime verifies before using it."""

    key: str
    sha256: str
    size: int


DEFAULT_DEBUG_PORT = 5678
"""debugpy's usual port, and what VS Code's "attach" configuration expects."""

DebugPhase = Literal["waiting", "attached", "no-debugger"]


class DebugOptions(msgspec.Struct, frozen=True, kw_only=True):
    """Where the job's debug server listens and how long it waits for a client."""

    host: str = "0.0.0.0"  # noqa: S104 - inside a pod; the client reaches it by port-forward
    port: int = DEFAULT_DEBUG_PORT
    """0: any free port (the local backend, where several debug jobs may run at once)."""
    wait_timeout: float = 600.0
    """Seconds to wait for a debugger before running without one (and saying so)."""


class DebugState(msgspec.Struct, kw_only=True):
    """The job's debug server, as the runtime last recorded it."""

    job_id: str
    phase: DebugPhase
    host: str
    port: int
    pid: int
    workdir: str
    """The job's working directory (the unpacked bundle), for a debugger's path mappings."""
    updated_at: str = ""
    schema_version: int = SCHEMA_VERSION


class HostStart(msgspec.Struct, kw_only=True):
    """One host of a multi-host job began running it, in this pod (or local process).

    Written create-only before the host runs anything: a second start of the same host (its
    container restarted, or its pod replaced by Kubernetes) finds it and does not run the
    function again behind Kinetic's back. A single-host job's runtime writes one too (host 0
    of 1, overwritten on a restart): it only says when the job began running.
    """

    job_id: str
    host: int
    hosts: int
    instance: str
    """The pod's uid (or the local process's own id): a restart in the same pod matches it."""
    started_at: str = ""
    schema_version: int = SCHEMA_VERSION


class InputChunk(msgspec.Struct, frozen=True, kw_only=True):
    """Inputs ``start`` to ``start + count - 1`` of a batch, stored together in one object: a
    msgpack array of :class:`PickledInput`."""

    start: int
    count: int
    ref: ArtifactRef

    def covers(self, index: int) -> bool:
        return self.start <= index < self.start + self.count


class PickledInput(msgspec.Struct, frozen=True, array_like=True):
    """One input of a batch, as its chunk holds it: the pickled ``(args, kwargs)`` and the
    ``CallDescriptor.data`` entries they refer to."""

    arguments: bytes
    data: list[int] = msgspec.field(default_factory=list)


class CallDescriptor(msgspec.Struct, kw_only=True):
    """What the runtime needs to run the call, stored at ``layout.call_key``.

    A batch stores one for all its children (``layout.group_call_key``): there ``payload`` is
    the function alone, ``job_id`` the group's id, and each child's arguments are in
    ``inputs``.
    """

    job_id: str
    func_name: str
    payload: ArtifactRef
    bundle: ArtifactRef | None = None
    workdir: str = "."
    """Working directory relative to the unpacked bundle root."""
    sys_path: list[str] = msgspec.field(default_factory=list)
    """Import roots relative to the bundle root, in ``sys.path`` order."""
    env: dict[str, str] = msgspec.field(default_factory=dict)
    """Kept declared for older readers; never written with values (the store is no place for
    secrets) and never read. See ``env_names``."""
    env_names: list[str] = msgspec.field(default_factory=list)
    """The names of the captured environment variables. Their values reach the job out of
    band, through the backend (``Backend.submit(record, env=...)``), never through the store."""
    output_dir: str = ""
    python_version: str = ""
    requirements: list[str] = msgspec.field(default_factory=list)
    debug: DebugOptions | None = None
    """Set for a ``debug=True`` job: the runtime waits for a debugger as these say."""
    data: list[DataSpec] = msgspec.field(default_factory=list)
    """The call's ``kinetic.Data``; the payload refers to entry ``i`` by a persistent id."""
    volumes: list[Volume] = msgspec.field(default_factory=list)
    inputs: list[InputChunk] = msgspec.field(default_factory=list)
    """A batch's inputs, in chunks (empty for a single job, whose payload holds its call)."""
    function_data: list[int] = msgspec.field(default_factory=list)
    """A batch's call: the ``data`` entries its function refers to (each input lists its own
    in its chunk), so a child stages only its own data."""
    schema_version: int = SCHEMA_VERSION


class Succeeded(msgspec.Struct, tag_field="status", tag="succeeded", kw_only=True):
    """The function returned; ``value`` is its cloudpickled return value."""

    job_id: str
    value: bytes
    started_at: str = ""
    finished_at: str = ""
    schema_version: int = SCHEMA_VERSION


class Failed(msgspec.Struct, tag_field="status", tag="failed", kw_only=True):
    """The job failed in ``phase`` (``fetch``, ``unpack``, ``deserialize``, ``run``, ...).

    ``exception`` holds the pickled exception when it could be pickled, so the client can
    re-raise the user's own type; the other fields always describe it in text.
    """

    job_id: str
    phase: str
    exc_type: str
    message: str
    traceback: str = ""
    exception: bytes | None = None
    started_at: str = ""
    finished_at: str = ""
    host: int = 0
    """The host that failed, for a job whose slice spans ``hosts`` hosts (0 is the leader)."""
    hosts: int = 1
    schema_version: int = SCHEMA_VERSION


ResultEnvelope = Succeeded | Failed


class _EnvelopeHeader(msgspec.Struct):
    """Decoded first, so a newer writer's unknown tag gives a clear error, not a decode crash."""

    status: str
    schema_version: int = SCHEMA_VERSION


class DataManifest(msgspec.Struct, kw_only=True):
    """The completion marker of local data uploaded to the store (``layout.data_marker_key``),
    written create-only after every file.

    Its presence is what makes an upload usable: one interrupted half-way has no marker, so it
    is never mistaken for a complete one, and is simply done again.
    """

    content_hash: str
    is_dir: bool
    files: int
    bytes: int
    name: str = ""
    """A single file's name (its object is ``files/<name>``)."""
    uploaded_at: str = ""
    schema_version: int = SCHEMA_VERSION


_T = TypeVar("_T")
_json_encoder = msgspec.json.Encoder()
_msgpack_encoder = msgspec.msgpack.Encoder()
_header_decoder = msgspec.msgpack.Decoder(_EnvelopeHeader)
_result_decoder = msgspec.msgpack.Decoder(ResultEnvelope)
_KNOWN_RESULT_TAGS = {"succeeded", "failed"}


def _check_version(version: int, what: str) -> None:
    if version > SCHEMA_VERSION:
        raise SchemaVersionError(
            f"{what} has schema version {version}, newer than this Kinetic understands "
            f"({SCHEMA_VERSION}). Upgrade kinetic on this machine to read it."
        )


def encode_json(record: msgspec.Struct) -> bytes:
    """Encode a record as JSON bytes."""
    return _json_encoder.encode(record)


def decode_json(data: bytes, record_type: type[_T], *, what: str) -> _T:
    """Decode ``data`` as ``record_type``; any problem names ``what`` (usually the key)."""
    try:
        raw: Any = msgspec.json.decode(data)
    except msgspec.DecodeError as exc:
        raise CorruptRecordError(f"{what} is not valid JSON ({exc}); it may be truncated.") from exc
    if not isinstance(raw, dict):
        raise CorruptRecordError(f"{what} should hold a JSON object, found {type(raw).__name__}.")
    version = raw.get("schema_version", SCHEMA_VERSION)
    if isinstance(version, int):
        _check_version(version, what)
    try:
        return msgspec.convert(raw, record_type)
    except msgspec.ValidationError as exc:
        raise CorruptRecordError(f"{what} is not a valid {record_type.__name__}: {exc}") from exc


def encode_result(envelope: ResultEnvelope) -> bytes:
    """Encode a result envelope as msgpack bytes."""
    return _msgpack_encoder.encode(envelope)


def decode_result(data: bytes, *, what: str) -> ResultEnvelope:
    """Decode a result envelope, checking its header first."""
    try:
        header = _header_decoder.decode(data)
    except msgspec.DecodeError as exc:
        raise CorruptRecordError(f"{what} is not a valid result envelope ({exc}).") from exc
    _check_version(header.schema_version, what)
    if header.status not in _KNOWN_RESULT_TAGS:
        raise SchemaVersionError(
            f"{what} has result status {header.status!r}, unknown to this Kinetic. "
            "Upgrade kinetic on this machine to read it."
        )
    try:
        envelope: ResultEnvelope = _result_decoder.decode(data)
    except msgspec.DecodeError as exc:
        raise CorruptRecordError(f"{what} is not a valid result envelope ({exc}).") from exc
    return envelope


_inputs_decoder = msgspec.msgpack.Decoder(list[PickledInput])


def encode_inputs(items: list[PickledInput]) -> bytes:
    """An :class:`InputChunk`'s object: its inputs, in order."""
    return _msgpack_encoder.encode(items)


def decode_inputs(data: bytes, *, what: str) -> list[PickledInput]:
    try:
        return _inputs_decoder.decode(data)
    except msgspec.DecodeError as exc:
        raise CorruptRecordError(f"{what} is not a chunk of inputs ({exc}).") from exc
