"""User functions for the retry and preemption scenarios, as a user's own module would define
them. Jobs import this module by name from the code bundle, so it imports only the standard
library (and, inside a function, the runtime's store, as a job that checkpoints would)."""

import json
import os
import re
import time
from pathlib import Path
from typing import Any

__all__ = [
    "CHECKPOINT",
    "count_with_checkpoints",
    "fail_as",
    "hold_for_preemption",
    "hold_on_the_first_attempt",
]

CHECKPOINT = "checkpoint.json"
HOLD_LIMIT_S = 120.0
"""A job never holds longer than this, so a broken test cannot leave it behind."""


def hold_for_preemption(gate: str) -> None:
    """Wait where a preemption is to strike; the test never opens ``gate`` (the bound only
    keeps a broken test from leaving the job behind)."""
    deadline = time.monotonic() + HOLD_LIMIT_S
    while not os.path.exists(gate) and time.monotonic() < deadline:
        time.sleep(0.01)


def hold_on_the_first_attempt(gate: str) -> str:
    """Wait for ``gate`` (never opened: only a timeout ends it) on an input's first attempt;
    return at once on a retry, whose job id ends ``-r<attempt>``."""
    if re.search(r"-r\d+$", os.environ["KINETIC_JOB_ID"]):
        return "retried"
    hold_for_preemption(gate)
    return "held to the end"


def count_with_checkpoints(total: int, pause_at: list[int], gate: str) -> dict[str, Any]:
    """Add up 1..``total``, saving a checkpoint to ``KINETIC_OUTPUT_DIR`` after every step and
    resuming from the latest one; wait at each step of ``pause_at`` to be preempted there.

    Returns the final checkpoint, whose ``resumed_from`` lists the step each run began at."""
    from kinetic_protocol import ObjectNotFoundError
    from kinetic_runtime.stores import open_store

    store = open_store(os.environ["KINETIC_OUTPUT_DIR"])
    try:
        checkpoint = json.loads(store.read(CHECKPOINT))
    except ObjectNotFoundError:
        checkpoint = {"step": 0, "sum": 0, "resumed_from": []}
    checkpoint["resumed_from"].append(checkpoint["step"])
    print(f"starting after step {checkpoint['step']}", flush=True)
    for step in range(checkpoint["step"] + 1, total + 1):
        checkpoint["step"], checkpoint["sum"] = step, checkpoint["sum"] + step
        store.write(CHECKPOINT, json.dumps(checkpoint).encode())
        print(f"saved step {step}", flush=True)
        if step in pause_at:
            hold_for_preemption(gate)
    return dict(checkpoint)


def fail_as(kind: str, marker_dir: str) -> str:
    """``raise``: the function raises (cause ``user``). ``exit``: its first attempt ends the
    process without a result (cause ``exit``), a later one returns."""
    if kind == "raise":
        raise ValueError("bad input")
    marker = Path(marker_dir) / f"{kind}-ran"
    if not marker.exists():
        marker.touch()
        os._exit(3)
    return "ok"
