"""A local job's state, read from its directory: what its supervisor recorded, or, once the
supervisor is gone without recording an end, one final state that matches what the job stored.

A job directory whose submitter died before it put the job in line is *abandoned*: nothing of
the job ran or will run, and a new submission of the same id replaces it.
"""

import contextlib
import json
from collections.abc import Callable
from pathlib import Path

from kinetic_protocol import FailureCause, JobState, Keyring, KineticError, Succeeded, layout
from kinetic_protocol import JobStatus as S
from kinetic_protocol.records import decode_result
from kinetic_protocol.signing import open_blob
from kinetic_runtime.local import supervisor
from kinetic_runtime.local.claim import Claimant, read_claimant, unclaimed
from kinetic_runtime.local.processes import may_kill_group, same_process_alive, terminate_group
from kinetic_runtime.local.slot_queue import in_line, ticket_of
from kinetic_runtime.stores import open_store

__all__ = ["abandoned", "job_state"]

_STOP_TIMEOUT = 30.0
"""How long stopping what is left of a job whose supervisor died may take."""
_SUPERVISOR_DIED = "the local supervisor process exited unexpectedly; the job was stopped"
_SETTLED_FROM_RESULT = (
    "its local supervisor exited before recording the end: the job had stored its result, so "
    "it succeeded, but its log may miss the last lines it printed"
)
_CAUSES = frozenset(cause.value for cause in FailureCause)


def abandoned(job_dir: Path) -> bool:
    """A job directory whose submitter died before putting it in line: nothing of the job
    ran or will run.

    The order of the looks matters, as a dispatcher may start the job meanwhile: it claims
    the job before it takes the ticket out of line, and only the submitter puts one in. So
    the submitter is seen dead first (no ticket comes after), then the ticket out of line,
    then the claim still there: a job claimed and taken out of line between two looks is
    never taken for one that was never put in line."""
    state = supervisor.read_state(job_dir) or {}
    if state.get("detail") == supervisor.NEVER_STARTED:
        return True
    try:
        launch = json.loads((job_dir / supervisor.LAUNCH_FILE).read_text())
        submitter = launch.get("submitter")
        if not isinstance(submitter, str) or same_process_alive(submitter):
            return False
        if in_line(Path(launch["slots_dir"]), ticket_of(launch)):
            return False
    except (OSError, ValueError, KeyError):
        return False  # being deleted, or not ours: leave it
    return unclaimed(job_dir)  # else started (or being deleted)


def _cause(state: dict[str, object]) -> FailureCause:
    """The cause the supervisor recorded (``timeout``); else the process ended on its own."""
    recorded = state.get("cause")
    if isinstance(recorded, str) and recorded in _CAUSES:
        return FailureCause(recorded)
    return FailureCause.EXIT


def job_state(job_dir: Path, store_uri: str | None, keys: Callable[[], Keyring]) -> JobState:
    """The state of the job in ``job_dir``; ``store_uri`` (where its result is) and its
    backend's ``keys`` settle a job whose supervisor died from the result it stored."""
    state = supervisor.read_state(job_dir)
    if state is None:  # a published job always has a state: this one is being removed
        return JobState(status=S.NOT_FOUND)
    phase = S(state["phase"])
    preemptions = int(state.get("preemptions") or 0)
    if phase.is_terminal:
        return JobState(
            status=phase,
            detail=state.get("detail", ""),
            exit_code=state.get("exit_code"),
            cause=_cause(state) if phase is S.FAILED else None,
            preemptions=preemptions,
        )
    state_now = JobState(status=phase, preemptions=preemptions)
    claimant = read_claimant(job_dir)
    if claimant is None:
        if abandoned(job_dir):
            return JobState(status=S.NOT_FOUND, detail=supervisor.NEVER_STARTED)
        return state_now
    if not same_process_alive(claimant.identity):
        return _without_supervisor(job_dir, claimant, store_uri, keys)
    return state_now


def _without_supervisor(
    job_dir: Path, claimant: Claimant, store_uri: str | None, keys: Callable[[], Keyring]
) -> JobState:
    """The supervisor is gone (its pid may be a stranger's by now): the job has just ended, is
    being deleted, or it died."""
    again = supervisor.read_state(job_dir)  # it may have finished just now
    if again and S(again["phase"]).is_terminal:
        return job_state(job_dir, store_uri, keys)
    if not job_dir.exists() or (job_dir / supervisor.CANCEL_MARKER).exists():
        return JobState(status=S.NOT_FOUND)  # being deleted: killed on purpose
    return _supervisor_died(job_dir, claimant, store_uri, keys)


def _supervisor_died(
    job_dir: Path, claimant: Claimant, store_uri: str | None, keys: Callable[[], Keyring]
) -> JobState:
    """Settle a job whose supervisor was killed: one final state, matching its result.

    The runtime dies with its supervisor (Linux); anything else of the job is killed here, so
    no result can appear after this. A result stored before is what the job did.
    """
    pid = claimant.pid
    if may_kill_group(claimant.identity) and not terminate_group(
        pid, grace=0, timeout=_STOP_TIMEOUT, poll_interval=0.01
    ):
        return JobState(status=S.RUNNING)  # still being stopped: look again
    state = JobState(status=S.FAILED, detail=_SUPERVISOR_DIED, cause=FailureCause.EXIT)
    job_id = job_dir.name
    if store_uri is not None:
        with contextlib.suppress(KineticError, OSError):
            key = layout.result_key(job_id)
            data = open_store(store_uri).read(key)
            envelope = decode_result(open_blob(keys(), "result", job_id, data, key=key), what=key)
            if isinstance(envelope, Succeeded):
                state = JobState(status=S.SUCCEEDED, detail=_SETTLED_FROM_RESULT)
    with contextlib.suppress(OSError):  # the job directory may be going away
        supervisor.write_state(
            job_dir, phase=state.status.value, supervisor_pid=pid, detail=state.detail
        )
    return state
