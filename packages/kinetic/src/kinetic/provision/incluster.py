"""Objects inside the cluster: the namespace, the Kubernetes service account with its Workload
Identity annotation, the LeaderWorkerSet controller and the GPU driver installer.

The connection is the kubeconfig context Kinetic's backends use (``KINETIC_KUBE_CONTEXT``, else
``gke_<project>_<zone>_<cluster>``); the file is only read. An existing LeaderWorkerSet install
is recognised by the API it serves (whoever installed it), and kept.
"""

from __future__ import annotations

from typing import Any

from kinetic.provision.engine import Action, Plan, Report, Step
from kinetic.provision.manifests import GPU_DRIVER, LWS, PinnedManifest, apply_manifest, fetch
from kinetic.provision.spec import ClusterSpec
from kinetic_gke import settings as gke_settings
from kinetic_gke.k8s import (
    AlreadyExists,
    ClusterConnection,
    NotFound,
    get_credentials_command,
    kube_context_name,
)
from kinetic_gke.pools import PoolInfo

__all__ = [
    "GPU_DRIVER_DAEMONSET",
    "WI_ANNOTATION",
    "connect",
    "gpu_driver_installed",
    "lws_version",
    "plan_in_cluster",
]

WI_ANNOTATION = "iam.gke.io/gcp-service-account"
LWS_GROUP = "leaderworkerset.x-k8s.io"
GPU_DRIVER_DAEMONSET = ("kube-system", "nvidia-driver-installer")


def connect(spec: ClusterSpec) -> ClusterConnection:
    """The cluster through the user's kubeconfig (never written); a ConfigError naming the
    ``gcloud ... get-credentials`` command when the context is missing."""
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
    from kubernetes import client

    apis = client.ApisApi(connection.api_client)
    listing = connection.read("discovering API groups", apis.get_api_versions)
    for group in listing.get("groups") or []:
        if group.get("name") == LWS_GROUP:
            return str((group.get("preferredVersion") or {}).get("version") or "unknown")
    return None


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


def _namespace_step(spec: ClusterSpec, connection: ClusterConnection) -> Step | None:
    core = connection.core
    if connection.read_or_none("reading the namespace", core.read_namespace, spec.namespace):
        return None

    def run(report: Report) -> None:
        body = {"metadata": {"name": spec.namespace, "labels": dict(spec.labels)}}
        try:
            connection.call("creating the namespace", core.create_namespace, body)
        except AlreadyExists:
            return

    return Step("create", f"namespace {spec.namespace}", run)


def _ksa_step(spec: ClusterSpec, connection: ClusterConnection) -> Step | None:
    core, email = connection.core, spec.account("jobs")
    doing = f"reading service account {spec.namespace}/{spec.ksa}"
    found = connection.read_or_none(
        doing, core.read_namespaced_service_account, spec.ksa, spec.namespace
    )
    annotations = ((found or {}).get("metadata") or {}).get("annotations") or {}
    if annotations.get(WI_ANNOTATION) == email:
        return None
    patch: dict[str, Any] = {"metadata": {"annotations": {WI_ANNOTATION: email}}}

    def run(report: Report) -> None:
        name, namespace = spec.ksa, spec.namespace
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

    action: Action = "update" if found else "create"
    target = f"Kubernetes service account {spec.namespace}/{spec.ksa}"
    return Step(action, target, run, f"{WI_ANNOTATION}={email}")


def _install_step(pin: PinnedManifest, connection: ClusterConnection, why: str) -> Step:
    def run(report: Report) -> None:
        applied = apply_manifest(connection, fetch(pin))
        report(f"  applied {len(applied)} objects of {pin.name} {pin.version}")

    return Step("install", f"{pin.name} {pin.version}", run, why)


def plan_in_cluster(
    spec: ClusterSpec, connection: ClusterConnection, pools: tuple[PoolInfo, ...]
) -> Plan:
    plan = Plan()
    for step in (_namespace_step(spec, connection), _ksa_step(spec, connection)):
        if step is not None:
            plan.steps.append(step)
    if not any(step.target.startswith("Kubernetes service account") for step in plan.steps):
        plan.notes.append(f"service account {spec.namespace}/{spec.ksa} has Workload Identity")
    version = lws_version(connection)
    if version is None:
        plan.steps.append(_install_step(LWS, connection, "multi-host TPU jobs run on it"))
    else:
        plan.notes.append(f"LeaderWorkerSet API served ({version}); kept")
    unmanaged = [pool.name for pool in pools if pool.gpu_type and not pool.gpu_driver_managed]
    if unmanaged and not gpu_driver_installed(connection):
        why = f"GPU pools without GKE-managed drivers: {', '.join(unmanaged)}"
        plan.steps.append(_install_step(GPU_DRIVER, connection, why))
    elif any(pool.gpu_type for pool in pools):
        plan.notes.append("GPU drivers installed by GKE")
    return plan
