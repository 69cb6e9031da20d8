"""Project-level resources: the APIs, the jobs bucket and the Artifact Registry repository
(service accounts and roles are :mod:`kinetic_gke.provision.accounts`).

Each ``plan_*`` reads what exists and returns the steps still needed; every step tolerates
finding its work already done (another run, or a run that failed after the call was made).
"""

from __future__ import annotations

from typing import Any

from kinetic_gke.gcp import google_error
from kinetic_gke.provision.clients import (
    GoogleClients,
    calling,
    exists_or_none,
    tolerate_exists,
    wait_operation,
)
from kinetic_gke.provision.engine import Plan, Report, Step
from kinetic_gke.provision.spec import REQUIRED_APIS, ClusterSpec

__all__ = [
    "disabled_apis",
    "get_bucket",
    "get_repository",
    "plan_apis",
    "plan_bucket",
    "plan_registry",
    "unplan_bucket",
    "unplan_registry",
]


# -- APIs ---------------------------------------------------------------------------------


def disabled_apis(clients: GoogleClients, project: str) -> list[str]:
    from google.cloud import service_usage_v1

    enabled = service_usage_v1.State.ENABLED
    missing = []
    for api in REQUIRED_APIS:
        service = calling(
            f"reading whether {api} is enabled in project {project}",
            clients.service_usage.get_service,
            request={"name": f"projects/{project}/services/{api}"},
        )
        if service.state != enabled:
            missing.append(api)
    return missing


def plan_apis(spec: ClusterSpec, clients: GoogleClients, missing: list[str]) -> Plan:
    """Enable the ``missing`` APIs (read with :func:`disabled_apis`)."""
    if not missing:
        return Plan(notes=[f"{len(REQUIRED_APIS)} APIs enabled"])

    def run(report: Report) -> None:
        operation = calling(
            f"enabling {', '.join(missing)}",
            clients.service_usage.batch_enable_services,
            request={"parent": f"projects/{spec.project}", "service_ids": missing},
        )
        wait_operation(f"enabling {', '.join(missing)}", operation)

    return Plan([Step("enable", f"{len(missing)} APIs", run, ", ".join(missing))])


# -- the bucket ---------------------------------------------------------------------------


def get_bucket(spec: ClusterSpec, clients: GoogleClients) -> Any:
    """The jobs bucket (a ``storage.Bucket``), or None if it does not exist."""
    doing = f"reading bucket gs://{spec.bucket}"
    return calling(doing, clients.storage.lookup_bucket, spec.bucket)


def plan_bucket(spec: ClusterSpec, clients: GoogleClients) -> Plan:
    storage = clients.storage
    if clients.readable("storage.googleapis.com") and get_bucket(spec, clients) is not None:
        return Plan(notes=[f"bucket gs://{spec.bucket} exists"])

    def run(report: Report) -> None:
        bucket = storage.bucket(spec.bucket)
        bucket.iam_configuration.uniform_bucket_level_access_enabled = True
        bucket.labels = dict(spec.labels)
        tolerate_exists(
            f"creating bucket gs://{spec.bucket}",
            storage.create_bucket,
            bucket,
            project=spec.project,
            location=spec.region,
        )

    return Plan([Step("create", f"bucket gs://{spec.bucket}", run, f"in {spec.region}")])


def unplan_bucket(spec: ClusterSpec, clients: GoogleClients) -> Plan:
    found = get_bucket(spec, clients)
    if found is None:
        return Plan()

    def run(report: Report) -> None:
        from google.api_core import exceptions

        try:
            found.delete(force=True)
        except exceptions.NotFound:
            return
        except Exception as exc:
            raise google_error(exc, f"deleting bucket gs://{spec.bucket}") from exc

    return Plan([Step("delete", f"bucket gs://{spec.bucket}", run, "and every object in it")])


# -- the image repository -----------------------------------------------------------------


def get_repository(spec: ClusterSpec, clients: GoogleClients) -> Any:
    """The Artifact Registry repository images go to, or None if it does not exist."""
    return calling(
        f"reading repository {spec.repository_path}",
        exists_or_none,
        clients.registry.get_repository,
        name=spec.repository_path,
    )


def plan_registry(spec: ClusterSpec, clients: GoogleClients) -> Plan:
    registry = clients.registry
    readable = clients.readable("artifactregistry.googleapis.com")
    if readable and get_repository(spec, clients) is not None:
        return Plan(notes=[f"Artifact Registry repository {spec.repository} exists"])

    def run(report: Report) -> None:
        from google.cloud import artifactregistry_v1

        doing = f"creating Artifact Registry repository {spec.repository} in {spec.region}"
        operation = tolerate_exists(
            doing,
            registry.create_repository,
            parent=f"projects/{spec.project}/locations/{spec.region}",
            repository_id=spec.repository,
            repository=artifactregistry_v1.Repository(
                format_=artifactregistry_v1.Repository.Format.DOCKER,
                description="Images built by Kinetic",
                labels=dict(spec.labels),
            ),
        )
        if operation is not None:
            wait_operation(doing, operation)

    target = f"Artifact Registry repository {spec.repository} ({spec.region})"
    return Plan([Step("create", target, run, "docker format")])


def unplan_registry(spec: ClusterSpec, clients: GoogleClients) -> Plan:
    registry = clients.registry
    if get_repository(spec, clients) is None:
        return Plan()

    def run(report: Report) -> None:
        doing = f"deleting repository {spec.repository_path}"
        operation = calling(
            doing, exists_or_none, registry.delete_repository, name=spec.repository_path
        )
        if operation is not None:
            wait_operation(doing, operation)

    return Plan([Step("delete", f"Artifact Registry repository {spec.repository}", run)])
