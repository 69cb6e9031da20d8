"""A queued job's state, completed with what Kueue says of it: its place in line while it waits,
the accelerator and capacity it was admitted on, the preemptions Kueue made, the end of a
job that Kueue preempted more often than its ``preemption_retries`` allow, and a flex-start
job's provisioning request (waiting for it, or failed by it).

Kueue re-queues a workload it evicts for a higher-priority one and runs it again when quota
frees; the Job never counts that as a failure. Kinetic counts it as a preemption, as it counts
a node taken away, and stops the job once they are spent: its Workload is deactivated, so Kueue
admits it no more.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import UTC, datetime

import msgspec

from kinetic_gke.choices import placement_of
from kinetic_gke.k8s import Obj
from kinetic_gke.k8s.kueue_api import QUEUE_LABEL
from kinetic_gke.queueing.kueue_view import KueueView, Queued
from kinetic_gke.queueing.provisioning import flex_state
from kinetic_gke.status import suspended
from kinetic_protocol import FailureCause, JobRecord, JobState, JobStatus
from kinetic_protocol.causes import RetryRule

__all__ = ["Completion", "Seen", "queued_states"]

Seen = tuple[JobRecord, Obj | None, JobState]
"""A job's record, its object (None: gone) and its state as the object and its pods say."""
Completion = Callable[[Sequence[Seen]], dict[str, JobState]]
"""Completes the states of queued jobs (:func:`queued_states` bound to a view and a kind)."""


def queued_states(view: KueueView, seen: Sequence[Seen], kind: str) -> dict[str, JobState]:
    """The state of each job of ``seen`` (record, object of ``kind``, state as its object and
    pods say; a finished one too, for the preemptions it went through)
    whose object waits or runs under a queue, completed from Kueue; by job id. One listing of
    Workloads for them all, and more reads only for those waiting."""
    live = [
        (record, obj, state)
        for record, obj, state in seen
        if obj is not None
        and QUEUE_LABEL in (obj["metadata"].get("labels") or {})
        and state.status is not JobStatus.NOT_FOUND
    ]
    if not live:
        return {}
    queued = view.queued((obj for _, obj, _ in live if obj is not None), kind)
    states: dict[str, JobState] = {}
    for record, obj, state in live:
        found = queued.get(str((obj or {}).get("metadata", {}).get("uid")))
        if found is not None:
            states[record.job_id] = _completed(view, record, obj, state, found)
    return states


def _pod_spec(obj: Obj) -> Obj:
    """The pod template's spec of a Job, or of a JobSet's first replicated Job."""
    spec = obj.get("spec") or {}
    if "replicatedJobs" in spec:
        replicated = spec["replicatedJobs"] or [{}]
        spec = ((replicated[0].get("template") or {}).get("spec")) or {}
    return dict((spec.get("template") or {}).get("spec") or {})


def _placed(record: JobRecord, obj: Obj | None, state: JobState, found: Queued) -> JobState:
    """``state`` with the choice the job was admitted on: read from the pod template, where
    Kueue wrote the flavor's node labels (from admission until the job ends)."""
    if obj is None or not found.flavor or suspended(obj):
        return state
    placement = placement_of(record, _pod_spec(obj), found.flavor)
    if placement is None or state.status is not JobStatus.RUNNING:
        return msgspec.structs.replace(state, placement=placement)
    detail = "; ".join(filter(None, [state.detail, f"on {placement.describe()}"]))
    return msgspec.structs.replace(state, placement=placement, detail=detail)


def _completed(
    view: KueueView, record: JobRecord, obj: Obj | None, state: JobState, found: Queued
) -> JobState:
    state = _placed(record, obj, state, found)
    preemptions = state.preemptions + found.preemptions
    if obj is not None and "replicatedJobs" in (obj.get("spec") or {}):
        # A JobSet counts each preemption by its queue again as the run of the group that
        # its readmission starts (see kinetic_gke.jobsets): one preemption, not two.
        preemptions = max(state.preemptions, found.preemptions)
    if state.status.is_terminal:
        return msgspec.structs.replace(state, preemptions=preemptions)
    if found.request is not None:
        counted = msgspec.structs.replace(state, preemptions=preemptions)
        flexed = flex_state(found.request, counted, datetime.now(UTC))
        if flexed is not None:
            return flexed
    rule = RetryRule(preemption_retries=record.preemption_retries)
    if found.evicted and rule.preemptions_spent(found.preemptions):
        view.deactivate(found.workload)
        return JobState(
            status=JobStatus.FAILED,
            detail=(
                f"preempted by its queue {found.preemptions} times, more than its "
                f"preemption_retries ({record.preemption_retries}): {found.evicted}"
            ),
            cause=FailureCause.PREEMPTED,
            preemptions=record.preemption_retries,
        )
    if state.status is not JobStatus.PENDING or found.place is None:
        return msgspec.structs.replace(state, preemptions=preemptions)
    detail = found.place.describe()
    if found.evicted:
        detail = f"preempted ({found.evicted}); {detail}"
    return msgspec.structs.replace(state, detail=detail, queue=found.place, preemptions=preemptions)
