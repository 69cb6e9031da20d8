"""Reaching Google Cloud APIs one way everywhere, and the GKE API's view of a cluster.

Every client Kinetic builds (GKE here; Artifact Registry, IAM, Service Usage and Compute in
``kinetic_gke.provision``) uses the REST transport, so what the tests drive against in-process
fakes is exactly what runs against Google. ``KINETIC_GCP_API_ENDPOINT`` sends the calls
elsewhere; an ``http://`` endpoint gets anonymous credentials, since a token must never travel
in clear text. The client libraries are imported only when a call is made.
"""

from __future__ import annotations

import base64
import binascii
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kinetic_gke import settings as declared
from kinetic_gke.k8s import ClusterConnection
from kinetic_gke.pools import Autoprovisioning, PoolHardware, PoolInfo
from kinetic_protocol import BackendError, ConfigError, KineticError

__all__ = [
    "ClusterView",
    "GoogleApiError",
    "access_token_source",
    "cluster_connection",
    "cluster_name",
    "cluster_view",
    "container_client",
    "client_kwargs",
    "google_error",
    "pool_info",
    "read_cluster",
]


class GoogleApiError(BackendError):
    """A Google Cloud API refused or failed a call; ``code`` is the HTTP status (0: none)."""

    def __init__(self, message: str, *, code: int = 0) -> None:
        super().__init__(message)
        self.code = code


def client_kwargs() -> dict[str, Any]:
    """Keyword arguments for any ``google-cloud-*`` client: REST, and the endpoint override."""
    kwargs: dict[str, Any] = {"transport": "rest"}
    endpoint = declared.GCP_API_ENDPOINT.from_env()
    if endpoint:
        from google.api_core.client_options import ClientOptions

        kwargs["client_options"] = ClientOptions(api_endpoint=endpoint)
        if endpoint.startswith("http://"):
            from google.auth.credentials import AnonymousCredentials

            kwargs["credentials"] = AnonymousCredentials()  # type: ignore[no-untyped-call]
    return kwargs


def google_error(exc: Exception, doing: str) -> KineticError:
    """The Kinetic error for a Google API or credentials failure while ``doing``."""
    from google.api_core import exceptions as api
    from google.auth import exceptions as auth

    if isinstance(exc, auth.DefaultCredentialsError | auth.RefreshError):
        return ConfigError(
            f"{doing}: no usable Google credentials ({exc}). Run `gcloud auth "
            "application-default login` (and `gcloud auth login`), then try again."
        )
    if isinstance(exc, api.GoogleAPICallError):
        code = int(exc.code or 0)
        message = str(exc.message or exc)  # whole: it often ends with what to do
        if exc.reason == "SERVICE_DISABLED":
            service = (exc.metadata or {}).get("service", "")
            return GoogleApiError(
                f"{doing}: the API is not enabled ({message}). `kinetic up` enables every API "
                "Kinetic needs"
                + (
                    f"; or enable it alone: `gcloud services enable {service}`." if service else "."
                ),
                code=code,
            )
        if code in (401, 403):
            return GoogleApiError(
                f"{doing}: permission denied ({message}). Ask a project owner for the role "
                "that allows it, or run this as someone who has it.",
                code=code,
            )
        return GoogleApiError(f"{doing}: {type(exc).__name__} {code} ({message})", code=code)
    return GoogleApiError(f"{doing}: {type(exc).__name__}: {exc}")


def container_client() -> Any:
    from google.cloud import container_v1

    return container_v1.ClusterManagerClient(**client_kwargs())


def cluster_name(project: str, zone: str, cluster: str) -> str:
    """The GKE API's resource name of a cluster."""
    return f"projects/{project}/locations/{zone}/clusters/{cluster}"


@dataclass(frozen=True)
class ClusterView:
    """What Kinetic needs to know of a GKE cluster."""

    name: str
    location: str
    status: str
    pools: tuple[PoolInfo, ...]
    autoprovisioning: Autoprovisioning
    workload_pool: str = ""
    fuse_driver: bool = False
    release_channel: str = ""
    version: str = ""
    endpoint: str = ""
    """The control plane's address (no scheme, HTTPS on 443 unless a port is given)."""
    ca_certificate: str = ""
    """The base64 PEM of the CA the endpoint's certificate is signed by."""


def pool_info(pool: Any) -> PoolInfo:
    """A ``container_v1.NodePool`` as a :class:`PoolInfo`."""
    config = pool.config
    gpus = list(config.accelerators)
    gpu = gpus[0] if gpus else None
    driver = gpu.gpu_driver_installation_config.gpu_driver_version if gpu else 0
    hardware = PoolHardware(
        config.machine_type,
        gpu_type=gpu.accelerator_type if gpu else "",
        gpu_count=int(gpu.accelerator_count) if gpu else 0,
        tpu_topology=pool.placement_policy.tpu_topology,
    )
    return PoolInfo(
        name=pool.name,
        hardware=hardware,
        spot=bool(config.spot or config.preemptible),
        autoscaling=bool(pool.autoscaling.enabled),
        min_nodes=int(pool.autoscaling.min_node_count),
        max_nodes=int(pool.autoscaling.max_node_count),
        node_count=int(pool.initial_node_count),
        gpu_driver_managed=int(driver) in (2, 3),  # DEFAULT, LATEST
        status=pool.status.name if pool.status else "",
        reservation=_reservation(config.reservation_affinity),
        flex_start=bool(pool.queued_provisioning.enabled),
    )


def _reservation(affinity: Any) -> str:
    """The reservation a pool's nodes consume by name (one specific reservation); empty for
    any other affinity."""
    specific = 3  # container_v1.ReservationAffinity.Type.SPECIFIC_RESERVATION
    if affinity is None or int(affinity.consume_reservation_type or 0) != specific:
        return ""
    values = list(affinity.values)
    return str(values[0]) if values else ""


def cluster_view(cluster: Any) -> ClusterView:
    """A ``container_v1.Cluster`` as a :class:`ClusterView`."""
    scaling = cluster.autoscaling
    maxima = {limit.resource_type: int(limit.maximum) for limit in scaling.resource_limits}
    limits = tuple((kind, most) for kind, most in maxima.items() if kind not in ("cpu", "memory"))
    return ClusterView(
        name=cluster.name,
        location=cluster.location,
        status=cluster.status.name if cluster.status else "",
        pools=tuple(pool_info(pool) for pool in cluster.node_pools),
        autoprovisioning=Autoprovisioning(
            bool(scaling.enable_node_autoprovisioning),
            limits,
            max_cpu=maxima.get("cpu", 0),
            max_memory_gb=maxima.get("memory", 0),
        ),
        workload_pool=cluster.workload_identity_config.workload_pool,
        fuse_driver=bool(cluster.addons_config.gcs_fuse_csi_driver_config.enabled),
        release_channel=(channel.name if (channel := cluster.release_channel.channel) else ""),
        version=cluster.current_master_version,
        endpoint=cluster.endpoint,
        ca_certificate=cluster.master_auth.cluster_ca_certificate,
    )


def read_cluster(project: str, zone: str, cluster: str, client: Any = None) -> ClusterView | None:
    """The cluster as the GKE API has it; None if it does not exist. Errors are Kinetic's."""
    from google.api_core import exceptions as api

    name = cluster_name(project, zone, cluster)
    try:
        found = (client or container_client()).get_cluster(name=name)
    except api.NotFound:
        return None
    except Exception as exc:
        raise google_error(exc, f"reading cluster {cluster} ({zone}, project {project})") from exc
    return cluster_view(found)


_CLOUD_PLATFORM = ("https://www.googleapis.com/auth/cloud-platform",)


def access_token_source() -> Callable[[], str]:
    """A function returning a valid access token of the Application Default Credentials (what
    ``gke-gcloud-auth-plugin`` gives kubectl), refreshed when it expires."""
    import google.auth
    from google.auth.transport.requests import Request

    doing = "getting an access token for the cluster from your Google credentials"
    try:
        credentials, _project = google.auth.default(scopes=_CLOUD_PLATFORM)
    except Exception as exc:
        raise google_error(exc, doing) from exc
    lock = threading.Lock()

    def token() -> str:
        with lock:
            if not credentials.valid:
                try:
                    credentials.refresh(Request())  # type: ignore[no-untyped-call]
                except Exception as exc:
                    raise google_error(exc, doing) from exc
            return str(credentials.token)

    return token


def cluster_connection(
    view: ClusterView, namespace: str, *, token: Callable[[], str] | None = None
) -> ClusterConnection:
    """The cluster reached directly at its endpoint, trusting only its own CA, with a Google
    access token: needs no kubeconfig context (a cluster just created has none) and writes
    none."""
    if not view.endpoint or not view.ca_certificate:
        raise ConfigError(
            f"Cluster {view.name} ({view.status or 'status unknown'}) has no endpoint yet; run "
            "the command again once it is RUNNING."
        )
    try:
        ca_certificate = base64.b64decode(view.ca_certificate, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise BackendError(
            f"The GKE API gave cluster {view.name} a CA certificate that is not base64: {exc}"
        ) from exc
    return ClusterConnection.from_endpoint(
        server=f"https://{view.endpoint}",
        ca_certificate=ca_certificate,
        token=token or access_token_source(),
        namespace=namespace,
    )
