"""Objects inside the cluster: the namespace, the Kubernetes service account with its Workload
Identity annotation, the LeaderWorkerSet and JobSet controllers, Kueue and its queues
(:mod:`kinetic_gke.provision.kueue_queues`) and the GPU driver installer.

``kinetic up`` reaches the cluster directly (:func:`connect`): at the endpoint the GKE API
reports, trusting the cluster's own CA, with a token of the user's Google credentials, so a
cluster it has just created needs no kubeconfig context and the user's kubeconfig is never
written. ``kinetic doctor`` instead checks the kubeconfig context the backends will use
(:func:`kubeconfig_connection`).

A cluster that cannot be read yet (being created) is planned as a new one; every step accepts
finding its work done. An existing LeaderWorkerSet, JobSet or Kueue install is recognised by the
API it serves (whoever installed it, whatever version), and kept.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kinetic_gke import settings as gke_settings
from kinetic_gke.gcp import cluster_connection, cluster_view
from kinetic_gke.k8s import (
    AlreadyExists,
    ClusterConnection,
    NotFound,
    discovery,
    get_credentials_command,
    kube_context_name,
)
from kinetic_gke.k8s.kueue_api import served_version
from kinetic_gke.pools import Autoprovisioning, PoolInfo
from kinetic_gke.provision.clients import GoogleClients
from kinetic_gke.provision.engine import Action, Plan, Report, Step
from kinetic_gke.provision.kueue_queues import QueuesFound, plan_queues, read_queues
from kinetic_gke.provision.manifests import (
    GPU_DRIVER,
    JOBSET,
    KUEUE,
    LWS,
    PinnedManifest,
    apply_manifest,
    unfinished_install,
)
from kinetic_gke.provision.slice_role import ROLE_NAME, apply_slice_role, slice_role_granted
from kinetic_gke.provision.spec import ClusterSpec

__all__ = [
    "GPU_DRIVER_DAEMONSET",
    "JOBSET_GROUP",
    "WI_ANNOTATION",
    "Connect",
    "InCluster",
    "connect",
    "gpu_driver_installed",
    "jobset_version",
    "kubeconfig_connection",
    "new_cluster",
    "lws_version",
    "plan_in_cluster",
    "read_in_cluster",
]

WI_ANNOTATION = "iam.gke.io/gcp-service-account"
LWS_GROUP = "leaderworkerset.x-k8s.io"
JOBSET_GROUP = "jobset.x-k8s.io"
GPU_DRIVER_DAEMONSET = ("kube-system", "nvidia-driver-installer")
Connect = Callable[[], ClusterConnection]
"""Makes (once) the connection the steps use, when the first of them runs."""


def connect(spec: ClusterSpec, clients: GoogleClients) -> ClusterConnection:
    """The cluster as ``kinetic up`` reaches it: through ``KINETIC_KUBE_CONTEXT`` when set,
    otherwise directly from what the GKE API says of it."""
    if gke_settings.KUBE_CONTEXT.from_env():
        return kubeconfig_connection(spec)
    from kinetic_gke.provision.cluster import require_cluster

    return cluster_connection(cluster_view(require_cluster(spec, clients)), spec.namespace)


def kubeconfig_connection(spec: ClusterSpec) -> ClusterConnection:
    """The cluster through the user's kubeconfig (only read), as Kinetic's backends reach it; a
    ConfigError naming the ``gcloud ... get-credentials`` command when the context is missing."""
    context = gke_settings.KUBE_CONTEXT.from_env() or kube_context_name(
        spec.project, spec.zone, spec.cluster
    )
    return ClusterConnection.from_kubeconfig(
        context=context,
        namespace=spec.namespace,
        get_credentials=get_credentials_command(spec.project, spec.zone, spec.cluster),
    )


def lws_version(connection: ClusterConnection) -> str | None:
    """The LeaderWorkerSet API version the cluster serves; None if it serves none."""
    return discovery.served_version(connection, LWS_GROUP)


def jobset_version(connection: ClusterConnection) -> str | None:
    """The JobSet API version the cluster serves; None if it serves none."""
    return discovery.served_version(connection, JOBSET_GROUP)


def gpu_driver_installed(connection: ClusterConnection) -> bool:
    from kubernetes import client

    namespace, name = GPU_DRIVER_DAEMONSET
    apps = client.AppsV1Api(connection.api_client)
    try:
        connection.read(
            f"reading DaemonSet {name}", apps.read_namespaced_daemon_set, name, namespace
        )
    except NotFound:
        return False
    return True


@dataclass(frozen=True)
class InCluster:
    """What the cluster already has of what ``kinetic up`` puts there."""

    namespace: bool
    service_account: bool
    workload_identity: str
    """The Google service account the Kubernetes one is annotated with ("" if none)."""
    lws: str | None
    """The LeaderWorkerSet API version served, None if none."""
    gpu_driver: bool
    lws_unfinished: bool = False
    """An install of Kinetic's stopped half-way (the API may be served already)."""
    slice_role: bool = False
    """The jobs' service account may stop its own slice (``slice_role``)."""
    kueue: str | None = None
    """The Kueue API version served, None if none."""
    kueue_unfinished: bool = False
    queues: QueuesFound | None = None
    """Kueue's objects of the kinds Kinetic makes; None where Kueue is not served."""
    jobset: str | None = None
    """The JobSet API version served, None if none."""
    jobset_unfinished: bool = False


def new_cluster(spec: ClusterSpec) -> InCluster:
    """What a cluster GKE has just created holds: the ``default`` namespace and, in every
    namespace, the ``default`` service account."""
    return InCluster(
        namespace=spec.namespace == "default",
        service_account=spec.ksa == "default" and spec.namespace == "default",
        workload_identity="",
        lws=None,
        gpu_driver=False,
    )


def read_in_cluster(spec: ClusterSpec, connection: ClusterConnection) -> InCluster:
    core = connection.core
    namespace = connection.read_or_none(
        "reading the namespace", core.read_namespace, spec.namespace
    )
    account = connection.read_or_none(
        f"reading service account {spec.namespace}/{spec.ksa}",
        core.read_namespaced_service_account, spec.ksa, spec.namespace,
    )  # fmt: skip
    annotations = ((account or {}).get("metadata") or {}).get("annotations") or {}
    kueue = served_version(connection)
    return InCluster(
        namespace=namespace is not None,
        service_account=account is not None,
        workload_identity=str(annotations.get(WI_ANNOTATION, "")),
        lws=lws_version(connection),
        gpu_driver=gpu_driver_installed(connection),
        lws_unfinished=unfinished_install(connection, LWS.load()),
        jobset=jobset_version(connection),
        jobset_unfinished=unfinished_install(connection, JOBSET.load()),
        slice_role=namespace is not None
        and slice_role_granted(connection, spec.namespace, spec.ksa),
        kueue=kueue,
        kueue_unfinished=unfinished_install(connection, KUEUE.load()),
        queues=read_queues(connection, spec.namespace) if kueue else None,
    )


def _namespace_step(spec: ClusterSpec, connect: Connect) -> Step:
    def run(report: Report) -> None:
        connection = connect()
        body = {"metadata": {"name": spec.namespace, "labels": dict(spec.labels)}}
        try:
            connection.call("creating the namespace", connection.core.create_namespace, body)
        except AlreadyExists:
            return

    return Step("create", f"namespace {spec.namespace}", run)


def _ksa_step(spec: ClusterSpec, connect: Connect, exists: bool) -> Step:
    email = spec.account("jobs")
    patch: dict[str, Any] = {"metadata": {"annotations": {WI_ANNOTATION: email}}}

    def run(report: Report) -> None:
        connection, name, namespace = connect(), spec.ksa, spec.namespace
        core = connection.core
        try:
            connection.call(
                f"creating service account {namespace}/{name}",
                core.create_namespaced_service_account, namespace,
                {"metadata": {"name": name, **patch["metadata"]}},
            )  # fmt: skip
        except AlreadyExists:
            connection.call(
                f"annotating service account {namespace}/{name}",
                core.patch_namespaced_service_account, name, namespace, patch,
            )  # fmt: skip

    action: Action = "update" if exists else "create"
    target = f"Kubernetes service account {spec.namespace}/{spec.ksa}"
    return Step(action, target, run, f"{WI_ANNOTATION}={email}")


def _slice_role_step(spec: ClusterSpec, connect: Connect) -> Step:
    def run(report: Report) -> None:
        apply_slice_role(connect(), spec.namespace, spec.ksa)

    target = f"Role {spec.namespace}/{ROLE_NAME} for {spec.namespace}/{spec.ksa}"
    return Step("grant", target, run, "a finished multi-host job stops its own slice")


_SERVED = {LWS.name: lws_version, JOBSET.name: jobset_version, KUEUE.name: served_version}
"""How to tell that a manifest's API is served already (by whoever installed it)."""


def _install_step(pin: PinnedManifest, connect: Connect, why: str) -> Step:
    data = pin.load()  # checked now, so a bad override stops the plan before any change

    def run(report: Report) -> None:
        connection = connect()
        served = _SERVED[pin.name](connection) if pin.name in _SERVED else None
        if served is not None and not unfinished_install(connection, data):
            report(f"  {pin.name} API served ({served}); kept")
            return
        applied = apply_manifest(connection, data)
        report(f"  applied {len(applied)} objects of {pin.name} {pin.version}")

    return Step("install", f"{pin.name} {pin.version}", run, why)


def _plan_install(
    pin: PinnedManifest, connect: Connect, served: str | None, unfinished: bool, why: str
) -> Plan:
    """Install ``pin`` where its API is not served, or finish an install of Kinetic's that
    stopped half-way; keep whatever else serves it."""
    if unfinished:
        return Plan([_install_step(pin, connect, "finish the install an earlier run began")])
    if served is None:
        return Plan([_install_step(pin, connect, why)])
    return Plan(notes=[f"{pin.name} API served ({served}); kept"])


def plan_in_cluster(
    spec: ClusterSpec,
    connect: Connect,
    pools: tuple[PoolInfo, ...],
    found: InCluster,
    scaling: Autoprovisioning | None = None,
) -> Plan:
    """The in-cluster steps, given what the cluster has (:func:`new_cluster` for one being made)
    and its pools and auto-provisioning (``scaling``; None: as ``kinetic up`` sets it)."""
    plan = Plan()
    if not found.namespace:
        plan.steps.append(_namespace_step(spec, connect))
    if found.workload_identity == spec.account("jobs"):
        plan.notes.append(f"service account {spec.namespace}/{spec.ksa} has Workload Identity")
    else:
        plan.steps.append(_ksa_step(spec, connect, found.service_account))
    if not found.slice_role:
        plan.steps.append(_slice_role_step(spec, connect))
    plan += _plan_install(
        LWS, connect, found.lws, found.lws_unfinished, "multi-host TPU jobs run on it"
    )
    plan += _plan_install(
        JOBSET, connect, found.jobset, found.jobset_unfinished,
        "multi-node GPU and multislice TPU jobs run on it",
    )  # fmt: skip
    plan += _plan_install(
        KUEUE, connect, found.kueue, found.kueue_unfinished, "jobs wait their turn in its queues"
    )
    if scaling is None or not scaling.enabled:
        scaling = Autoprovisioning(True, max_cpu=spec.max_cpu, max_memory_gb=spec.max_memory_gb)
    plan += plan_queues(spec, connect, pools, scaling, found.queues)
    needing = [pool.name for pool in pools if pool.needs_gpu_driver]
    if needing and not found.gpu_driver:
        why = f"GPU pools without GKE-managed drivers: {', '.join(needing)}"
        if GPU_DRIVER.available:
            plan.steps.append(_install_step(GPU_DRIVER, connect, why))
        else:
            plan.notes.append(
                f"{why}. No NVIDIA driver installer ships with Kinetic: install one "
                f"(`{GPU_DRIVER.manual_command}`), or set {GPU_DRIVER.source_setting.env} and "
                f"{GPU_DRIVER.checksum_setting.env} for `kinetic up` to install it"
            )
    elif any(pool.hardware.gpu_type for pool in pools):
        plan.notes.append("GPU drivers installed")
    return plan
