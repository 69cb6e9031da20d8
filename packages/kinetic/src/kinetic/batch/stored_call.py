"""A batch's call, stored once: its function, its inputs in chunks, and the call descriptor
every child runs with its own input.

Everything is pickled before anything is written: a function that cannot be pickled is an
error before the batch exists, and an input that cannot be pickled is that input's submission
error (the spec's rule), the others going on. A child then costs one small store write (its
child record) instead of a payload, a call and a record of its own.

The batch's ``kinetic.Data`` (its function's and every input's) are numbered once and planned
once, so data that several inputs share is uploaded once; each input records the entries it
refers to, and a child stages only those and its function's.
"""

from collections.abc import Callable
from typing import Any

from kinetic.data.plan import CallData
from kinetic.data.reference import Data
from kinetic.packaging.serialize import (
    DataNumbering,
    Pickled,
    serialize_arguments,
    serialize_function,
)
from kinetic.submission import Target, artifact_ref, call_descriptor, plan_data, upload_bundle
from kinetic_protocol import (
    InputChunk,
    ObjectStore,
    PickledInput,
    PreconditionFailedError,
    SerializationError,
    layout,
)
from kinetic_protocol.records import encode_inputs
from kinetic_protocol.signing import seal_json

__all__ = ["CHUNK_BYTES", "CHUNK_INPUTS", "PickledBatch"]

CHUNK_INPUTS = 10_000
CHUNK_BYTES = 8 * 1024 * 1024
"""A chunk closes at this many inputs or bytes: ten objects for a batch of 100,000 (a hundred
store writes were most of its submission's 4 s), while a child downloads and decodes at most
8 MiB of which its own input is part (10,000 small inputs decode in milliseconds)."""

Call = tuple[tuple[Any, ...], dict[str, Any]]


class PickledBatch:
    """The pickled function and inputs of a batch, ready to be planned and written."""

    def __init__(self, fn: Callable[..., Any], calls: list[Call]) -> None:
        self._numbering = DataNumbering()
        self.function: Pickled = serialize_function(fn, self._numbering)
        self.inputs: list[PickledInput] = []
        self.errors: dict[int, SerializationError] = {}
        """Inputs that cannot be pickled; stored as empty items, never submitted."""
        for index, (args, kwargs) in enumerate(calls):
            try:
                where = f" (input {index})"
                pickled = serialize_arguments(fn, args, kwargs, self._numbering, where=where)
            except SerializationError as exc:
                self.errors[index] = exc
                self.inputs.append(PickledInput(arguments=b""))
            else:
                self.inputs.append(PickledInput(arguments=pickled.payload, data=pickled.refers_to))

    @property
    def data(self) -> list[Data]:
        """Every ``kinetic.Data`` of the batch, in the order of their numbers."""
        return self._numbering.found

    def chunks(self) -> list[tuple[int, list[PickledInput]]]:
        """``(start, items)`` of each chunk, in input order."""
        chunks: list[tuple[int, list[PickledInput]]] = []
        items: list[PickledInput] = []
        start, size = 0, 0
        for index, item in enumerate(self.inputs):
            if items and (len(items) >= CHUNK_INPUTS or size + len(item.arguments) > CHUNK_BYTES):
                chunks.append((start, items))
                start, items, size = index, [], 0
            items.append(item)
            size += len(item.arguments)
        if items:
            chunks.append((start, items))
        return chunks

    def plan(self, target: Target) -> CallData:
        """The batch's data on ``target`` (local data uploaded once if its jobs need it)."""
        return plan_data(target, self.data)

    def write(
        self,
        target: Target,
        data: CallData,
        group_id: str,
        func_name: str,
        *,
        env_names: list[str],
    ) -> None:
        """Write the bundle (if new), the function, the inputs and then the call (naming the
        captured variables ``env_names``), each create-only: a rerun of a half-finished write
        finds the same bytes in place."""
        store = target.store
        upload_bundle(store, target.bundle)
        function_key = layout.group_function_key(group_id)
        _write_once(store, function_key, self.function.payload)
        refs = []
        for start, items in self.chunks():
            encoded = encode_inputs(items)
            key = layout.input_chunk_key(group_id, start)
            _write_once(store, key, encoded)
            refs.append(InputChunk(start=start, count=len(items), ref=artifact_ref(key, encoded)))
        call = call_descriptor(
            target,
            group_id,
            func_name,
            artifact_ref(function_key, self.function.payload),
            env_names=env_names,
            data=data.specs,
            volumes=data.volumes,
            inputs=refs,
            function_data=self.function.refers_to,
        )
        keyring = target.backend.signing_keys(create=True)
        _write_once(
            store, layout.group_call_key(group_id), seal_json(keyring, "call", group_id, call)
        )


def _write_once(store: ObjectStore, key: str, data: bytes) -> None:
    try:
        store.write(key, data, if_absent=True)
    except PreconditionFailedError:
        if store.read(key) != data:
            raise
