"""Project-level resources: the APIs, the jobs bucket, the Artifact Registry repository, the
service accounts with their roles, and the Workload Identity binding.

Each ``plan_*`` reads what exists and returns the steps still needed; every step tolerates
finding its work already done (another run, or a run that failed after the call was made).
"""

from __future__ import annotations

from typing import Any

from kinetic.provision.clients import GoogleClients, calling, wait_operation
from kinetic.provision.engine import Plan, Report, Step
from kinetic.provision.iam_api import add_binding, remove_member
from kinetic.provision.spec import (
    BUILD_ROLES,
    JOB_BUCKET_ROLE,
    NODE_ROLES,
    REQUIRED_APIS,
    ClusterSpec,
)
from kinetic_gke.gcp import GoogleApiError

__all__ = [
    "ACCOUNT_ROLES",
    "bucket_condition",
    "disabled_apis",
    "missing_grants",
    "plan_apis",
    "plan_bucket",
    "plan_registry",
    "plan_service_accounts",
    "plan_workload_identity",
    "project_policy",
    "unplan_accounts",
    "unplan_bucket",
    "unplan_registry",
]

ACCOUNT_ROLES = {
    "nodes": "Kinetic GKE nodes",
    "build": "Kinetic image builds",
    "jobs": "Kinetic job pods (Workload Identity)",
}
_WI_ROLE = "roles/iam.workloadIdentityUser"
_POLICY_ATTEMPTS = 5


def _exists(fn: Any, *args: Any, **kwargs: Any) -> Any:
    """The resource, or None if the API says it does not exist."""
    from google.api_core import exceptions

    try:
        return fn(*args, **kwargs)
    except exceptions.NotFound:
        return None


def _tolerate_exists(doing: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
    """Create; "already exists" (an earlier run, or a concurrent one) is success (None)."""
    try:
        return calling(doing, fn, *args, **kwargs)
    except GoogleApiError as exc:
        if exc.code == 409:
            return None
        raise


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


def plan_apis(spec: ClusterSpec, clients: GoogleClients) -> Plan:
    missing = disabled_apis(clients, spec.project)
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


def plan_bucket(spec: ClusterSpec, clients: GoogleClients) -> Plan:
    storage = clients.storage
    found = calling(f"reading bucket gs://{spec.bucket}", storage.lookup_bucket, spec.bucket)
    if found is not None:
        return Plan(notes=[f"bucket gs://{spec.bucket} exists"])

    def run(report: Report) -> None:
        bucket = storage.bucket(spec.bucket)
        bucket.iam_configuration.uniform_bucket_level_access_enabled = True
        bucket.labels = dict(spec.labels)
        _tolerate_exists(
            f"creating bucket gs://{spec.bucket}",
            storage.create_bucket,
            bucket,
            project=spec.project,
            location=spec.region,
        )

    return Plan([Step("create", f"bucket gs://{spec.bucket}", run, f"in {spec.region}")])


def unplan_bucket(spec: ClusterSpec, clients: GoogleClients) -> Plan:
    found = calling(
        f"reading bucket gs://{spec.bucket}", clients.storage.lookup_bucket, spec.bucket
    )
    if found is None:
        return Plan()

    def run(report: Report) -> None:
        from google.api_core import exceptions

        try:
            found.delete(force=True)
        except exceptions.NotFound:
            return
        except Exception as exc:
            raise calling_error(exc, f"deleting bucket gs://{spec.bucket}") from exc

    return Plan([Step("delete", f"bucket gs://{spec.bucket}", run, "and every object in it")])


def calling_error(exc: Exception, doing: str) -> Exception:
    from kinetic_gke.gcp import google_error

    return google_error(exc, doing)


# -- the image repository -----------------------------------------------------------------


def plan_registry(spec: ClusterSpec, clients: GoogleClients) -> Plan:
    registry = clients.registry
    found = calling(
        f"reading repository {spec.repository_path}",
        _exists,
        registry.get_repository,
        name=spec.repository_path,
    )
    if found is not None:
        return Plan(notes=[f"Artifact Registry repository {spec.repository} exists"])

    def run(report: Report) -> None:
        from google.cloud import artifactregistry_v1

        doing = f"creating Artifact Registry repository {spec.repository} in {spec.region}"
        operation = _tolerate_exists(
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
    found = calling(
        f"reading repository {spec.repository_path}",
        _exists,
        registry.get_repository,
        name=spec.repository_path,
    )
    if found is None:
        return Plan()

    def run(report: Report) -> None:
        doing = f"deleting repository {spec.repository_path}"
        operation = calling(doing, _exists, registry.delete_repository, name=spec.repository_path)
        if operation is not None:
            wait_operation(doing, operation)

    return Plan([Step("delete", f"Artifact Registry repository {spec.repository}", run)])


# -- service accounts and roles -----------------------------------------------------------


def plan_service_accounts(spec: ClusterSpec, clients: GoogleClients) -> Plan:
    plan = Plan()
    for role, display in ACCOUNT_ROLES.items():
        email = spec.account(role)
        if calling(f"reading service account {email}", clients.iam.get, spec.project, email):
            plan.notes.append(f"service account {email} exists")
            continue

        def run(report: Report, role: str = role, display: str = display) -> None:
            _tolerate_exists(
                f"creating service account {spec.account(role)}",
                clients.iam.create, spec.project, spec.account_id(role), display,
            )  # fmt: skip

        plan.steps.append(Step("create", f"service account {email}", run, display))
    grants = missing_grants(spec, project_policy(spec, clients))
    if not grants:
        plan.notes.append("project roles granted")
        return plan

    def grant(report: Report) -> None:
        _change_project_policy(spec, clients, lambda policy: _grant_all(spec, policy))

    shown = ", ".join(sorted({role for role, _member, _cond in grants}))
    plan.steps.append(Step("grant", f"{len(grants)} project roles", grant, shown))
    return plan


def bucket_condition(spec: ClusterSpec) -> dict[str, str]:
    """Limits the jobs account's storage role to the jobs bucket."""
    return {
        "title": f"kinetic-bucket-{spec.cluster}",
        "expression": f'resource.name.startsWith("projects/_/buckets/{spec.bucket}")',
    }


def _wanted_grants(spec: ClusterSpec) -> list[tuple[str, str, dict[str, str] | None]]:
    nodes, build = (
        f"serviceAccount:{spec.account('nodes')}",
        f"serviceAccount:{spec.account('build')}",
    )
    wanted: list[tuple[str, str, dict[str, str] | None]] = []
    wanted += [(role, nodes, None) for role in NODE_ROLES]
    wanted += [(role, build, None) for role in BUILD_ROLES]
    wanted.append(
        (JOB_BUCKET_ROLE, f"serviceAccount:{spec.account('jobs')}", bucket_condition(spec))
    )
    return wanted


def missing_grants(
    spec: ClusterSpec, policy: dict[str, Any]
) -> list[tuple[str, str, dict[str, str] | None]]:
    """The project role grants ``kinetic up`` makes that ``policy`` lacks."""
    import copy

    missing = []
    for role, member, condition in _wanted_grants(spec):
        if add_binding(copy.deepcopy(policy), role, member, condition):
            missing.append((role, member, condition))
    return missing


def _grant_all(spec: ClusterSpec, policy: dict[str, Any]) -> bool:
    changed = False
    for role, member, condition in _wanted_grants(spec):
        changed |= add_binding(policy, role, member, condition)
    return changed


def project_policy(spec: ClusterSpec, clients: GoogleClients) -> dict[str, Any]:
    """The project's IAM policy as JSON (version 3, so conditions are kept)."""
    from google.protobuf import json_format

    policy = calling(
        f"reading the IAM policy of project {spec.project}",
        clients.projects.get_iam_policy,
        request={
            "resource": f"projects/{spec.project}",
            "options": {"requested_policy_version": 3},
        },
    )
    found: dict[str, Any] = json_format.MessageToDict(policy)
    return found


def _change_project_policy(spec: ClusterSpec, clients: GoogleClients, change: Any) -> None:
    """Read, change, write; a concurrent change (etag mismatch) is read again and retried."""
    from google.api_core import exceptions
    from google.iam.v1 import policy_pb2
    from google.protobuf import json_format

    for attempt in range(_POLICY_ATTEMPTS):
        policy = project_policy(spec, clients)
        if not change(policy):
            return
        message = json_format.ParseDict(policy, policy_pb2.Policy())
        try:
            clients.projects.set_iam_policy(
                request={"resource": f"projects/{spec.project}", "policy": message}
            )
            return
        except exceptions.Aborted:
            if attempt == _POLICY_ATTEMPTS - 1:
                raise
        except Exception as exc:
            raise calling_error(exc, f"writing the IAM policy of project {spec.project}") from exc


def plan_workload_identity(spec: ClusterSpec, clients: GoogleClients) -> Plan:
    """Let the Kubernetes service account act as the jobs account (Workload Identity)."""
    email = spec.account("jobs")
    target = f"Workload Identity: {spec.namespace}/{spec.ksa} acts as {email}"
    account = calling(f"reading service account {email}", clients.iam.get, spec.project, email)
    if account is not None:
        policy = calling(
            f"reading the policy of {email}", clients.iam.get_policy, spec.project, email
        )
        if not add_binding(policy, _WI_ROLE, spec.ksa_member):
            return Plan(notes=[target])

    def run(report: Report) -> None:
        for _ in range(_POLICY_ATTEMPTS):
            policy = calling(
                f"reading the policy of {email}", clients.iam.get_policy, spec.project, email
            )
            if not add_binding(policy, _WI_ROLE, spec.ksa_member):
                return
            try:
                clients.iam.set_policy(spec.project, email, policy)
                return
            except Exception as exc:
                from google.api_core import exceptions

                if not isinstance(exc, exceptions.Aborted):
                    raise calling_error(exc, f"writing the policy of {email}") from exc

    return Plan([Step("grant", target, run, _WI_ROLE)])


def _remove_all(policy: dict[str, Any], members: list[str]) -> bool:
    changed = False
    for member in members:
        changed |= remove_member(policy, member)
    return changed


def unplan_accounts(spec: ClusterSpec, clients: GoogleClients) -> Plan:
    """Revoke the project roles, then delete the service accounts."""
    members = [f"serviceAccount:{spec.account(role)}" for role in ACCOUNT_ROLES]
    plan = Plan()
    policy = project_policy(spec, clients)
    if _remove_all(policy, members):

        def revoke(report: Report) -> None:
            _change_project_policy(spec, clients, lambda policy: _remove_all(policy, members))

        plan.steps.append(Step("revoke", "project roles of Kinetic's service accounts", revoke))
    for role in ACCOUNT_ROLES:
        email = spec.account(role)
        if not calling(f"reading service account {email}", clients.iam.get, spec.project, email):
            continue

        def delete(report: Report, email: str = email) -> None:
            from google.api_core import exceptions

            try:
                clients.iam.delete(spec.project, email)
            except exceptions.NotFound:
                return
            except Exception as exc:
                raise calling_error(exc, f"deleting service account {email}") from exc

        plan.steps.append(Step("delete", f"service account {email}", delete))
    return plan
