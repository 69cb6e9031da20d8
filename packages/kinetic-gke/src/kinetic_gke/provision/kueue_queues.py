"""Kueue's queues in the cluster, kept in step with its node pools by ``kinetic up`` and
``kinetic pool add/remove``.

What is wanted comes from :func:`kinetic_gke.provision.kueue_objects.kueue_objects`; what the
cluster has is read first, so a plan that finds everything in place has no step. The step
applies every wanted object server-side (field manager ``kinetic``), then deletes what Kinetic
made that is no longer wanted (a removed pool's flavor, an undeclared queue's ClusterQueue and
its LocalQueue here). An object of the same name that Kinetic did not make (its labels say so)
is an administrator's: it is left as it is. Applying what is wanted again is harmless, so a run
that failed half-way converges on the next.

The step waits, when it runs, for Kueue to serve its API and for its controller Deployment (the
shipped manifest's) to be available: Kueue's webhooks refuse every queue object until then.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from kinetic_gke.k8s import ClusterConnection, NotFound
from kinetic_gke.k8s.kueue_api import GROUP, VERSION, served_version
from kinetic_gke.pools import Autoprovisioning, PoolInfo
from kinetic_gke.provision.engine import Action, Plan, Report, Step
from kinetic_gke.provision.kueue_objects import KINDS, SHARE_ANNOTATION, kueue_objects
from kinetic_gke.provision.manifests import apply_objects
from kinetic_gke.provision.quantities import amount, shown, totals
from kinetic_gke.provision.queue_shares import QueueShares
from kinetic_gke.provision.spec import ClusterSpec
from kinetic_protocol import BackendError

__all__ = [
    "CONTROLLER",
    "PLURALS",
    "QueuesFound",
    "controller_state",
    "plan_queues",
    "read_queues",
]

CONTROLLER = ("kueue-system", "kueue-controller-manager")
"""The Deployment of Kueue's controller, as the shipped manifest names it."""
PLURALS = {
    "ResourceFlavor": "resourceflavors",
    "WorkloadPriorityClass": "workloadpriorityclasses",
    "ProvisioningRequestConfig": "provisioningrequestconfigs",
    "AdmissionCheck": "admissionchecks",
    "ClusterQueue": "clusterqueues",
    "LocalQueue": "localqueues",
}
READY_WAIT_S = 600.0
"""How long the step waits for a Kueue just installed to run (pulling its image included)."""
DELETION_WAIT_S = 60.0
"""How long the step waits for a wanted object that is being deleted to be gone."""
_POLL_S = 2.0

Obj = dict[str, Any]
Key = tuple[str, str]


@dataclass(frozen=True)
class QueuesFound:
    """The cluster's objects of the kinds Kinetic makes (LocalQueues of one namespace), by
    kind and name."""

    objects: dict[Key, Obj] = field(default_factory=dict)

    def terminating(self, key: Key) -> bool:
        """Whether the object is being deleted: Kueue holds a flavor or ClusterQueue with a
        finalizer until nothing uses it, so a deletion may outlive the run that asked for it."""
        return bool((self.objects.get(key, {}).get("metadata") or {}).get("deletionTimestamp"))

    def made_by_kinetic(self, key: Key, labels: dict[str, str]) -> bool:
        found = (self.objects[key].get("metadata") or {}).get("labels") or {}
        return all(found.get(k) == v for k, v in labels.items())

    def shares(self, labels: dict[str, str]) -> QueueShares | None:
        """The split Kinetic's ClusterQueues record, if it made any."""
        pairs = []
        for kind, name in self.objects:
            annotations = self.objects[kind, name].get("metadata", {}).get("annotations") or {}
            share = str(annotations.get(SHARE_ANNOTATION, ""))
            if (
                kind == "ClusterQueue"
                and share.isdigit()
                and self.made_by_kinetic((kind, name), labels)
            ):
                pairs.append((name, int(share)))
        return QueueShares.of(pairs) if pairs else None


def read_queues(connection: ClusterConnection, namespace: str) -> QueuesFound:
    objects: dict[Key, Obj] = {}
    custom = connection.custom
    for kind in KINDS:
        plural = PLURALS[kind]
        if kind == "LocalQueue":
            listing = connection.read(
                f"listing {kind}s in {namespace}", custom.list_namespaced_custom_object,
                GROUP, VERSION, namespace, plural,
            )  # fmt: skip
        else:
            listing = connection.read(
                f"listing {kind}s", custom.list_cluster_custom_object, GROUP, VERSION, plural
            )
        for item in listing.get("items") or []:
            objects[kind, item["metadata"]["name"]] = item
    return QueuesFound(objects)


def _contains(found: Any, wanted: Any) -> bool:
    """Whether ``found`` has everything ``wanted`` says (the server adds defaults of its own)."""
    if isinstance(wanted, dict):
        return isinstance(found, dict) and all(
            _contains(found.get(key), value) for key, value in wanted.items()
        )
    if isinstance(wanted, list):
        return (
            isinstance(found, list)
            and len(found) == len(wanted)
            and all(_contains(f, w) for f, w in zip(found, wanted, strict=True))
        )
    return bool(found == wanted) or _same_quantity(found, wanted)


def _same_quantity(found: Any, wanted: Any) -> bool:
    """Whether two quantities are one amount: the server may write ``1024Gi`` as ``1Ti``."""
    if not isinstance(wanted, str) or not isinstance(found, str | int):
        return False
    try:
        return amount(found) == amount(wanted)
    except ValueError:
        return False


def _key(obj: Obj) -> Key:
    return obj["kind"], obj["metadata"]["name"]


def _quota_totals(cluster_queue: Obj) -> dict[str, str]:
    """Each resource's nominal quota over every flavor, for people (``google.com/tpu 8``)."""
    summed: dict[str, Fraction] = {}
    for group in cluster_queue.get("spec", {}).get("resourceGroups") or []:
        for resource, total in totals(group.get("flavors") or [], "nominalQuota").items():
            summed[resource] = summed.get(resource, Fraction(0)) + total
    return {resource: shown(resource, total) for resource, total in summed.items()}


def _change(wanted: Obj, found: Obj | None) -> str:
    kind, name = _key(wanted)
    if found is None:
        return f"+{kind}/{name}"
    if kind != "ClusterQueue":
        return f"~{kind}/{name}"
    before, after = _quota_totals(found), _quota_totals(wanted)
    moved = [f"{r} {before.get(r, '0')} -> {after[r]}" for r in after if before.get(r) != after[r]]
    return f"~{kind}/{name}" + (f" ({', '.join(moved)})" if moved else "")


def plan_queues(
    spec: ClusterSpec,
    connect: Any,
    pools: Sequence[PoolInfo],
    scaling: Autoprovisioning,
    found: QueuesFound | None,
) -> Plan:
    """The step that brings Kueue's objects in line with ``pools``; ``found`` None: Kueue is
    not served yet (it is being installed), so everything is made."""
    have = found or QueuesFound()
    declared = QueueShares.parse(spec.queues) if spec.queues else None
    shares = declared or have.shares(spec.labels) or QueueShares()
    wanted, notes = kueue_objects(pools, scaling, shares, spec.namespace, spec.labels)
    plan = Plan(notes=list(notes))
    apply: list[Obj] = []
    changes: list[str] = []
    for obj in wanted:
        key = _key(obj)
        current = have.objects.get(key)
        if current is not None and not have.made_by_kinetic(key, spec.labels):
            plan.notes.append(f"{key[0]} {key[1]} was not made by Kinetic; kept as it is")
        elif current is not None and have.terminating(key):
            apply.append(obj)
            changes.append(f"+{key[0]}/{key[1]} (once its deletion ends)")
        elif current is None or not _contains(current, obj):
            apply.append(obj)
            changes.append(_change(obj, current))
    keys = {_key(obj) for obj in wanted}
    unwanted = []
    for key in have.objects:
        if key in keys or not have.made_by_kinetic(key, spec.labels):
            continue
        if have.terminating(key):
            plan.notes.append(f"{key[0]} {key[1]} is being deleted (Kueue lets it go once unused)")
        else:
            unwanted.append(key)
    changes += [f"-{kind}/{name}" for kind, name in unwanted]
    if not apply and not unwanted:
        plan.notes.append(f"Kueue queues in place ({', '.join(shares.names)})")
        return plan

    def run(report: Report) -> None:
        connection = connect()
        _wait_for_kueue(connection, report)
        now = read_queues(connection, spec.namespace)  # the plan may predate the cluster
        foreign = [
            obj for obj in apply
            if _key(obj) in now.objects and not now.made_by_kinetic(_key(obj), spec.labels)
        ]  # fmt: skip
        for kind, name in map(_key, foreign):
            report(f"  {kind} {name} was not made by Kinetic; kept as it is")
        mine = [obj for obj in apply if obj not in foreign]
        _wait_for_deletions(connection, [_key(o) for o in mine], now, spec.namespace, report)
        if mine:
            applied = apply_objects(connection, mine)
            report(f"  applied {', '.join(applied)}")
        for key in sorted(unwanted, key=lambda k: -KINDS.index(k[0])):
            _delete(connection, key, spec.namespace, report)

    action: Action = "update" if have.objects else "create"
    queues = ", ".join(f"{name} (share {share})" for name, share in shares.shares)
    plan.steps.append(Step(action, f"Kueue queues {queues}", run, "; ".join(changes)))
    return plan


def _delete(connection: ClusterConnection, key: Key, namespace: str, report: Report) -> None:
    """Delete a Kinetic object (LocalQueues: of ``namespace``, the only ones read)."""
    kind, name = key
    custom = connection.custom
    try:
        if kind == "LocalQueue":
            connection.send(
                f"deleting {kind} {namespace}/{name}", custom.delete_namespaced_custom_object,
                GROUP, VERSION, namespace, PLURALS[kind], name,
            )  # fmt: skip
        else:
            connection.send(
                f"deleting {kind} {name}", custom.delete_cluster_custom_object,
                GROUP, VERSION, PLURALS[kind], name,
            )  # fmt: skip
    except NotFound:
        return
    report(f"  deleted {kind}/{name}")


def _wait_for_deletions(
    connection: ClusterConnection,
    keys: list[Key],
    found: QueuesFound,
    namespace: str,
    report: Report,
) -> None:
    """Until the objects among ``keys`` that are being deleted are gone: an apply would only
    update an object on its way out. A flavor that a ClusterQueue still uses is held by Kueue
    for as long as it is used, and the queues want it used, so the wait is bounded and ends
    in an error that says how to let it go."""
    leaving = [key for key in keys if found.terminating(key)]
    if not leaving:
        return
    report(f"  waiting for {', '.join(f'{k}/{n}' for k, n in leaving)} to finish being deleted")
    deadline = time.monotonic() + DELETION_WAIT_S
    while True:
        now = read_queues(connection, namespace)
        leaving = [key for key in leaving if key in now.objects]
        if not leaving:
            return
        if time.monotonic() >= deadline:
            break
        time.sleep(_POLL_S)
    kind, name = leaving[0]
    held = (now.objects[kind, name].get("metadata") or {}).get("finalizers") or []
    raise BackendError(
        f"{kind} {name} is being deleted, and the queues need it: it is still there after "
        f"{DELETION_WAIT_S:.0f} s, held by {', '.join(held) or 'no finalizer'} (Kueue keeps a "
        "flavor while a ClusterQueue uses it). Let it go, then run `kinetic up` again to make "
        f"it anew: `kubectl patch {kind.lower()} {name} --type=merge "
        """-p '{"metadata":{"finalizers":null}}'`."""
    )


def controller_state(connection: ClusterConnection) -> tuple[int, int] | None:
    """Kueue's controller Deployment: (available replicas, wanted replicas); None where there
    is none (Kueue installed some other way)."""
    from kubernetes import client

    namespace, name = CONTROLLER
    apps = client.AppsV1Api(connection.api_client)
    deployment = connection.read_or_none(
        f"reading Deployment {namespace}/{name}", apps.read_namespaced_deployment, name, namespace
    )
    if deployment is None:
        return None
    wanted = int((deployment.get("spec") or {}).get("replicas", 1))
    return int((deployment.get("status") or {}).get("availableReplicas") or 0), wanted


def _wait_for_kueue(connection: ClusterConnection, report: Report) -> None:
    deadline = time.monotonic() + READY_WAIT_S
    told = False
    while True:
        served = served_version(connection) is not None
        state = controller_state(connection) if served else None
        if served and (state is None or state[0] >= 1):
            return
        if time.monotonic() >= deadline:
            namespace, name = CONTROLLER
            where = (
                f"its controller {namespace}/{name} has {state[0]} of {state[1]} replicas available"
                if state
                else "its API is not served"
            )
            raise BackendError(
                f"Kueue is not running after {READY_WAIT_S:.0f} s ({where}), and its webhooks "
                f"refuse queues until it is. See why: `kubectl -n {namespace} get pods`; then "
                "run `kinetic up` again."
            )
        if not told:
            report("  waiting for Kueue's controller to run")
            told = True
        time.sleep(_POLL_S)
