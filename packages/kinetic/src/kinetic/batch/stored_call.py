"""A batch's call, stored once: its function, its inputs in chunks, and the call descriptor
every child runs with its own input.

Everything is pickled before anything is written: a function that cannot be pickled is an
error before the batch exists, and an input that cannot be pickled is that input's submission
error (the spec's rule), the others going on. A child then costs one small store write (its
child record) instead of a payload, a call and a record of its own.
"""

from collections.abc import Callable
from typing import Any

from kinetic.packaging import serialize_arguments, serialize_function
from kinetic.submission import (
    Target,
    artifact_ref,
    call_descriptor,
    check_data_arguments,
    upload_bundle,
)
from kinetic_protocol import (
    InputChunk,
    ObjectStore,
    PreconditionFailedError,
    SerializationError,
    layout,
)
from kinetic_protocol.records import encode_inputs, encode_json

__all__ = ["CHUNK_BYTES", "CHUNK_INPUTS", "PickledBatch"]

CHUNK_INPUTS = 1000
CHUNK_BYTES = 8 * 1024 * 1024
"""A chunk closes at this many inputs or bytes: few objects for a large batch, while a child
downloads little more than its own input."""

Call = tuple[tuple[Any, ...], dict[str, Any]]


class PickledBatch:
    """The pickled function and inputs of a batch, ready to be written."""

    def __init__(self, target: Target, fn: Callable[..., Any], calls: list[Call]) -> None:
        for args, kwargs in calls:
            check_data_arguments(target, args, kwargs)
        self.target = target
        self.function = serialize_function(fn)
        self.inputs: list[bytes] = []
        self.errors: dict[int, SerializationError] = {}
        """Inputs that cannot be pickled; stored as empty items, never submitted."""
        for index, (args, kwargs) in enumerate(calls):
            try:
                self.inputs.append(serialize_arguments(fn, args, kwargs, where=f" (input {index})"))
            except SerializationError as exc:
                self.errors[index] = exc
                self.inputs.append(b"")

    def chunks(self) -> list[tuple[int, list[bytes]]]:
        """``(start, items)`` of each chunk, in input order."""
        chunks: list[tuple[int, list[bytes]]] = []
        items: list[bytes] = []
        start, size = 0, 0
        for index, item in enumerate(self.inputs):
            if items and (len(items) >= CHUNK_INPUTS or size + len(item) > CHUNK_BYTES):
                chunks.append((start, items))
                start, items, size = index, [], 0
            items.append(item)
            size += len(item)
        if items:
            chunks.append((start, items))
        return chunks

    def write(self, group_id: str, func_name: str) -> None:
        """Write the bundle (if new), the function, the inputs and then the call, each
        create-only: a rerun of a half-finished write finds the same bytes in place."""
        store = self.target.store
        upload_bundle(store, self.target.bundle)
        function_key = layout.group_function_key(group_id)
        _write_once(store, function_key, self.function)
        refs = []
        for start, items in self.chunks():
            data = encode_inputs(items)
            key = layout.input_chunk_key(group_id, start)
            _write_once(store, key, data)
            refs.append(InputChunk(start=start, count=len(items), ref=artifact_ref(key, data)))
        call = call_descriptor(
            self.target,
            group_id,
            func_name,
            artifact_ref(function_key, self.function),
            inputs=refs,
        )
        _write_once(store, layout.group_call_key(group_id), encode_json(call))


def _write_once(store: ObjectStore, key: str, data: bytes) -> None:
    try:
        store.write(key, data, if_absent=True)
    except PreconditionFailedError:
        if store.read(key) != data:
            raise
