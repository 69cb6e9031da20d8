"""Which input a batch child reads: the one at its index, whichever chunk holds it."""

import pytest
from runtime_jobs import JobStage

from kinetic_protocol import CallDescriptor, CorruptRecordError, InputChunk, PickledInput, layout
from kinetic_protocol.records import encode_inputs
from kinetic_runtime.calls import BatchInput, read_input

GROUP = "grp-chunks"
SIZES = (3, 3, 2)
"""Chunks of inputs 0-2, 3-5 and 6-7: every edge of a chunk is an edge of another."""


def _batch(jobs: JobStage) -> CallDescriptor:
    """A batch call over chunks of ``SIZES``; input ``i``'s arguments are ``b"input-<i>"``."""
    chunks: list[InputChunk] = []
    start = 0
    for size in SIZES:
        items = [PickledInput(arguments=f"input-{i}".encode()) for i in range(start, start + size)]
        ref = jobs.put(layout.input_chunk_key(GROUP, start), encode_inputs(items))
        chunks.append(InputChunk(start=start, count=size, ref=ref))
        start += size
    payload = jobs.put(layout.group_function_key(GROUP), b"function")
    return CallDescriptor(job_id=GROUP, func_name="f", payload=payload, inputs=chunks)


@pytest.mark.parametrize("index", [0, 2, 3, 5, 6, 7])
def test_an_input_at_a_chunk_edge_is_read_from_its_own_chunk(jobs: JobStage, index: int) -> None:
    """The first and last input of each chunk: an off-by-one in finding the chunk reads past
    the end of the one before (every 1001st input of a real batch)."""
    item = read_input(jobs.store, _batch(jobs), BatchInput(GROUP, index))
    assert item.arguments == f"input-{index}".encode()


def test_an_input_past_the_last_chunk_is_refused(jobs: JobStage) -> None:
    with pytest.raises(CorruptRecordError, match=r"stores no input 8 .*lists 8 inputs"):
        read_input(jobs.store, _batch(jobs), BatchInput(GROUP, 8))
