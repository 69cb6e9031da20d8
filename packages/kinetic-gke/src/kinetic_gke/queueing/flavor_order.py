"""Before upload: can a queue give a job each of its choices, in the job's order?

Kueue tries a ClusterQueue's flavors in one order, the same for every job, and gives a job the
first whose labels and taints its pods accept and that has free quota. A job's list of choices
(``accelerator=[...]``, ``capacity=[...]``) therefore means what it says only when every choice
has a flavor in the queue and the queue's order puts them in the job's order. Both are checked
here, reading the LocalQueue, its ClusterQueue and their flavors; where one cannot be read (no
right to read cluster-scoped objects) nothing is refused: Kueue admits the job all the same.
"""

from __future__ import annotations

from kinetic_gke.capacity import CapacityCheck
from kinetic_gke.choices import check_choices, choice_index
from kinetic_gke.queueing.kueue_view import KueueView
from kinetic_protocol import ConfigError, PrepareRequest
from kinetic_protocol.capacity import FLEX_START, SPOT, Choice, reservation_of

__all__ = ["check_flavor_order", "check_placeable"]


def check_placeable(
    request: PrepareRequest,
    view: KueueView,
    capacity: CapacityCheck,
    *,
    queue: str,
    cluster: str,
) -> None:
    """Refuse, before upload, a job whose choices cannot be given: one choice, when no pool
    can ever run it (the pre-flight check); several, when queue ``queue`` (``""``: no Kueue)
    cannot give them in the job's order."""
    choices = check_choices(request, queued=bool(queue), cluster=cluster)
    if len(choices) > 1:
        check_flavor_order(view, queue, choices)
        return
    kind = choices[0].capacity
    capacity.require(
        request.accelerator, spot=kind == SPOT, reservation=reservation_of(kind),
        flex_start=kind == FLEX_START,
    )  # fmt: skip


def _flavor_names(cluster_queue: dict[str, object]) -> list[str]:
    spec = cluster_queue.get("spec")
    groups = spec.get("resourceGroups") if isinstance(spec, dict) else None
    return [
        str(flavor.get("name")) for group in groups or [] for flavor in group.get("flavors") or []
    ]


def _pool_add(choice: Choice) -> str:
    kind = choice.capacity
    extra = {SPOT: " --spot", FLEX_START: " --flex-start"}.get(kind, "")
    if reservation_of(kind):
        extra = f" --reservation {reservation_of(kind)}"
    return f"kinetic pool add --accelerator {choice.accelerator}{extra}"


def check_flavor_order(view: KueueView, queue: str, choices: tuple[Choice, ...]) -> None:
    """Refuse ``choices`` (in the job's order) that queue ``queue`` cannot give as asked,
    saying which choice lacks a flavor or what order the queue tries them in."""
    local = view.read_local_queue(queue)
    cluster_queue_name = str(((local or {}).get("spec") or {}).get("clusterQueue") or "")
    cluster_queue = view.read_cluster_queue(cluster_queue_name) if cluster_queue_name else None
    if cluster_queue is None:
        return
    order: list[tuple[str, int]] = []  # (flavor, the first choice it gives), in Kueue's order
    for name in _flavor_names(cluster_queue):
        flavor = view.read_flavor(name)
        if flavor is None:
            return
        labels = (flavor.get("spec") or {}).get("nodeLabels") or {}
        index = choice_index(labels, choices)
        if index is not None:
            order.append((name, index))
    where = f"queue {queue!r} (cluster queue {cluster_queue_name!r})"
    given = {index for _, index in order}
    missing = [choice for index, choice in enumerate(choices) if index not in given]
    if missing:
        raise ConfigError(
            f"{where} has no flavor for {', '.join(c.describe() for c in missing)}: no node pool "
            "of the cluster offers it, so that choice could never be given. Add a pool "
            f"(`{_pool_add(missing[0])}`, then `kinetic up` keeps the queues in step), or leave "
            "it out of accelerator=/capacity=."
        )
    indexes = [index for _, index in order]
    if indexes != sorted(indexes):
        tried = ", ".join(f"{choices[index].describe()} [{name}]" for name, index in order)
        asked = ", ".join(choice.describe() for choice in choices)
        raise ConfigError(
            f"Your choices, in the order asked ({asked}), are not the order {where} tries "
            f"them in: {tried}. Kueue gives every job of a queue that one order, so list "
            "accelerator= and capacity= in it (docs/guides/capacity.md says how `kinetic up` "
            "orders a queue's flavors)."
        )
