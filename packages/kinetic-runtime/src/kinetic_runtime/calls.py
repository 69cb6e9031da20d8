"""What a job runs: its own stored call, or, for a batch child, the batch's call and its input.

A batch stores its function once and its inputs in chunks; a child reads the shared call, the
function and the one chunk that holds its input, and unpickles nothing but its own input.
Each ``kinetic.Data`` in a pickle is a persistent id that unpickles as the path it was staged
at (see ``kinetic_protocol.data``).
"""

import hashlib
import io
import pickle
from dataclasses import dataclass
from typing import Any

from kinetic_protocol import (
    ArtifactRef,
    CallDescriptor,
    CorruptRecordError,
    IntegrityError,
    ObjectNotFoundError,
    ObjectStore,
    PickledInput,
    layout,
    parse_child_job_id,
)
from kinetic_protocol.data import PERSISTENT_ID_TAG
from kinetic_protocol.records import decode_inputs
from kinetic_protocol.signing import Keyring, open_json

__all__ = [
    "BatchInput",
    "StoredCall",
    "fetch_call",
    "load_call",
    "open_call",
    "read_call",
    "read_input",
    "verify",
]


@dataclass(frozen=True)
class BatchInput:
    """A batch child's place in its batch: which shared call it runs, with which input."""

    group_id: str
    index: int


@dataclass(frozen=True)
class StoredCall:
    """A call as stored: where to read it and, for a batch child, its input."""

    key: str
    owner: str
    """Whose call it is, as signed: the job's id, or a batch child's batch id."""
    member: BatchInput | None = None

    @classmethod
    def of(cls, job_id: str, member: BatchInput | None) -> "StoredCall":
        if member is None:
            return cls(key=layout.call_key(job_id), owner=job_id)
        return cls(key=layout.group_call_key(member.group_id), owner=member.group_id, member=member)


def verify(ref: ArtifactRef, data: bytes, owner: str = "") -> None:
    """Refuse an artifact whose bytes are not the ones its (signed) call pins, before anything
    uses them."""
    digest = hashlib.sha256(data).hexdigest()
    if digest != ref.sha256:
        raise IntegrityError(
            f"{ref.key} has sha256 {digest[:12]}..., but the signed call pins "
            f"{ref.sha256[:12]}...: it was changed or truncated after submission. Nothing of "
            "it was unpickled or run.",
            job_id=owner,
            key=ref.key,
        )


def read_call(
    store: ObjectStore, where: StoredCall, job_id: str, keyring: Keyring
) -> CallDescriptor:
    return open_call(keyring, where, fetch_call(store, where, job_id))


def open_call(keyring: Keyring, where: StoredCall, data: bytes) -> CallDescriptor:
    """The call, once its signature is verified: it pins every other artifact's sha256."""
    return open_json(keyring, "call", where.owner, data, CallDescriptor, key=where.key)


def fetch_call(store: ObjectStore, where: StoredCall, job_id: str) -> bytes:
    try:
        return store.read(where.key)
    except ObjectNotFoundError:
        if where.member is None and parse_child_job_id(job_id) is not None:
            raise ObjectNotFoundError(
                f"No object {where.key!r}: job {job_id} looks like a batch child, which runs "
                "its batch's call. The backend must start the runtime with "
                "kinetic_protocol.runtime_args(record) (it adds --group and --index)."
            ) from None
        raise


def read_input(store: ObjectStore, call: CallDescriptor, member: BatchInput) -> PickledInput:
    """Input ``member.index`` as its verified chunk holds it."""
    chunk = next((c for c in call.inputs if c.covers(member.index)), None)
    if chunk is None:
        raise CorruptRecordError(
            f"Batch {member.group_id} stores no input {member.index} (its call lists "
            f"{sum(c.count for c in call.inputs)} inputs)."
        )
    data = store.read(chunk.ref.key)
    verify(chunk.ref, data, member.group_id)
    items = decode_inputs(data, what=chunk.ref.key)
    if len(items) != chunk.count:
        raise CorruptRecordError(
            f"{chunk.ref.key} holds {len(items)} inputs where its call says {chunk.count}."
        )
    return items[member.index - chunk.start]


class _CallUnpickler(pickle.Unpickler):
    """Unpickles with each ``kinetic.Data`` replaced by the path it was staged at."""

    def __init__(self, data: bytes, paths: list[str | None]) -> None:
        super().__init__(io.BytesIO(data))
        self._paths = paths

    def persistent_load(self, pid: Any) -> str:
        if (
            isinstance(pid, tuple)
            and len(pid) == 2
            and pid[0] == PERSISTENT_ID_TAG
            and isinstance(pid[1], int)
            and 0 <= pid[1] < len(self._paths)
            and (path := self._paths[pid[1]]) is not None
        ):
            return path
        raise CorruptRecordError(
            f"the payload refers to data {pid!r}, which its call descriptor does not list for "
            f"it ({len(self._paths)} entries); it was not written by a matching Kinetic client."
        )


def _loads(data: bytes, paths: list[str | None]) -> Any:
    return _CallUnpickler(data, paths).load()


Call = tuple[Any, tuple[Any, ...], dict[str, Any]]


def load_call(payload: bytes, arguments: PickledInput | None, paths: list[str | None]) -> Call:
    """Unpickle ``(function, args, kwargs)``: the payload alone for a job of its own, or the
    batch's function and the child's ``(args, kwargs)``; either must be what a client wrote."""
    if arguments is None:
        call = _loads(payload, paths)
        if not (isinstance(call, tuple) and len(call) == 3 and callable(call[0])):
            raise CorruptRecordError(
                f"the payload unpickled to {type(call).__name__}, not (function, args, kwargs); "
                "it was not written by a Kinetic client."
            )
        return call
    fn = _loads(payload, paths)
    given = _loads(arguments.arguments, paths)
    if not callable(fn) or not (
        isinstance(given, tuple)
        and len(given) == 2
        and isinstance(given[0], tuple)
        and isinstance(given[1], dict)
    ):
        raise CorruptRecordError(
            "the batch's function or this child's input did not unpickle to a function and "
            "(args, kwargs); they were not written by a Kinetic client."
        )
    return fn, given[0], given[1]
