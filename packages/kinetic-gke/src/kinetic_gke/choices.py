"""A job's choices of accelerator and capacity (:mod:`kinetic_protocol.capacity`) in the
cluster's terms: the pod terms that let Kueue give it any of them, and the one it got.

One choice pins the pod's nodes as :func:`kinetic_gke.scheduling.scheduling_for` does. Several
leave the node selector free and name each choice as a term of a required node affinity (any
term may match), with the tolerations of them all. Kueue matches those terms against each
ResourceFlavor's node labels and taints in its ClusterQueue's order, admits the job on the
first flavor with free quota, and writes that flavor's labels into the pod's node selector
before any pod exists, so the pod lands on that flavor's nodes and its template says which
choice it got. The pod asks for the smallest CPU and memory of the choices' machines: it fits
whichever it is given.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from kinetic_gke.scheduling import (
    FLEX_START_LABEL,
    RESERVATION_LABEL,
    SPOT_LABEL,
    Scheduling,
    scheduling_for,
)
from kinetic_protocol import Accelerator, ConfigError, JobRecord, PrepareRequest, parse_accelerator
from kinetic_protocol.capacity import (
    FLEX_START,
    ON_DEMAND,
    SPOT,
    Choice,
    Placement,
    job_choices,
    record_choices,
    reservation_of,
)
from kinetic_protocol.host_groups import shape_label

__all__ = [
    "PodPlacement",
    "check_choices",
    "choice_index",
    "choice_scheduling",
    "job_placement",
    "placement_of",
]


def check_choices(request: PrepareRequest, *, queued: bool, cluster: str) -> tuple[Choice, ...]:
    """The choices of a job about to be submitted, in order; a ConfigError for what this
    backend cannot give: flex-start or several choices where no Kueue admits the job, or
    several choices for a job of several nodes or slices."""
    accelerators = (request.accelerator, *request.fallback_accelerators)
    capacity = request.capacity or ((SPOT,) if request.spot else (ON_DEMAND,))
    choices = job_choices(tuple(a.name for a in accelerators), capacity)
    if FLEX_START in capacity and not queued:
        raise ConfigError(
            f"capacity='flex-start' is admitted through Kueue's provisioning requests, and "
            f"cluster {cluster!r} does not serve Kueue. Run `kinetic up` to install it, and "
            "`kinetic pool add --accelerator ACC --flex-start` for a pool that gets its nodes "
            "that way (docs/guides/capacity.md)."
        )
    if len(choices) == 1:
        return choices
    asked = f"{len(choices)} choices ({', '.join(c.describe() for c in choices)})"
    if not queued:
        raise ConfigError(
            f"A job of {asked} needs Kueue to choose among them, and cluster {cluster!r} does "
            "not serve it. Run `kinetic up` to install Kueue and its queues, or give one "
            "accelerator and one kind of capacity."
        )
    shape = shape_label(request.nodes, request.slices)
    if shape:
        raise ConfigError(
            f"A job of {shape} runs on one accelerator and one kind of capacity on gke for now; "
            f"it was given {asked}. Give one of them."
        )
    return choices


def choice_scheduling(
    choice: Choice,
    *,
    accelerator: Accelerator | None = None,
    cpu: str | None = None,
    memory: str | None = None,
) -> Scheduling:
    """The pod terms of one choice (``accelerator``: its accelerator, parsed already)."""
    return scheduling_for(
        accelerator or parse_accelerator(choice.accelerator),
        spot=choice.capacity == SPOT,
        reservation=reservation_of(choice.capacity),
        flex_start=choice.capacity == FLEX_START,
        cpu=cpu,
        memory=memory,
    )


@dataclass(frozen=True)
class PodPlacement:
    """What a pod template carries to run on a job's choices."""

    scheduling: Scheduling
    affinity: dict[str, Any] | None = None
    """A required node affinity naming every choice; None when there is one choice."""


def _term(placed: Scheduling, choice: Choice) -> dict[str, Any]:
    expressions = [
        {"key": key, "operator": "In", "values": [value]}
        for key, value in sorted(placed.node_selector.items())
    ]
    if choice.capacity != SPOT:  # the pod tolerates spot for another choice: not for this one
        expressions.append({"key": SPOT_LABEL, "operator": "DoesNotExist"})
    if not reservation_of(choice.capacity):
        expressions.append({"key": RESERVATION_LABEL, "operator": "DoesNotExist"})
    if choice.capacity != FLEX_START:
        expressions.append({"key": FLEX_START_LABEL, "operator": "DoesNotExist"})
    return {"matchExpressions": expressions}


def _smallest(amounts: list[str]) -> str:
    from kubernetes.utils import parse_quantity

    return min(amounts, key=lambda amount: Decimal(parse_quantity(amount)))  # type: ignore[no-untyped-call]


def job_placement(
    record: JobRecord,
    accelerator: Accelerator,
    *,
    cpu: str | None = None,
    memory: str | None = None,
) -> PodPlacement:
    """The pod terms for every choice of ``record`` (``accelerator``: its first, parsed)."""
    choices = record_choices(record)
    if len(choices) == 1:
        return PodPlacement(
            choice_scheduling(choices[0], accelerator=accelerator, cpu=cpu, memory=memory)
        )
    each = [
        choice_scheduling(
            choice,
            accelerator=accelerator if choice.accelerator == accelerator.name else None,
            cpu=cpu,
            memory=memory,
        )
        for choice in choices
    ]
    placed = Scheduling()
    placed.limits = dict(each[0].limits)  # one family: the same accelerators per host
    for resource in each[0].requests:
        placed.requests[resource] = _smallest([p.requests[resource] for p in each])
    for scheduling in each:
        placed.tolerations += [t for t in scheduling.tolerations if t not in placed.tolerations]
    terms = [_term(scheduling, choice) for scheduling, choice in zip(each, choices, strict=True)]
    affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": terms,
    }}}  # fmt: skip
    return PodPlacement(placed, affinity)


def choice_index(labels: Mapping[str, str], choices: tuple[Choice, ...]) -> int | None:
    """The first of ``choices`` that nodes with ``labels`` (a flavor's, or the node selector
    Kueue wrote from one) give; None when they give none of them."""
    for index, choice in enumerate(choices):
        wanted = choice_scheduling(choice).node_selector
        if any(labels.get(key) != value for key, value in wanted.items()):
            continue
        if choice.capacity != SPOT and labels.get(SPOT_LABEL) == "true":
            continue
        if labels.get(RESERVATION_LABEL, "") != reservation_of(choice.capacity):
            continue
        if (labels.get(FLEX_START_LABEL) == "true") != (choice.capacity == FLEX_START):
            continue
        return index
    return None


def placement_of(
    record: JobRecord, pod_spec: Mapping[str, Any], flavor: str = ""
) -> Placement | None:
    """The choice an admitted job got, read from its pod template's node selector (where Kueue
    wrote the admitting flavor's labels); None when it matches none."""
    choices = record_choices(record)
    index = choice_index(pod_spec.get("nodeSelector") or {}, choices)
    if index is None:
        return None
    choice = choices[index]
    return Placement(accelerator=choice.accelerator, capacity=choice.capacity, flavor=flavor)
