"""Identities: the service accounts ``kinetic up`` makes (nodes, image builds, job pods), their
least-privilege project roles, and the Workload Identity binding that lets the namespace's
Kubernetes service account act as the jobs account.

Policies are changed read-modify-write with their etag, so a concurrent change is read again
rather than overwritten.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from kinetic_gke.gcp import google_error
from kinetic_gke.provision.clients import GoogleClients, calling, tolerate_exists
from kinetic_gke.provision.engine import Plan, Report, Step
from kinetic_gke.provision.iam_api import add_binding, remove_member
from kinetic_gke.provision.spec import BUILD_ROLES, JOB_BUCKET_ROLE, NODE_ROLES, ClusterSpec

__all__ = [
    "ACCOUNT_ROLES",
    "WORKLOAD_IDENTITY_ROLE",
    "bucket_condition",
    "get_account",
    "missing_grants",
    "plan_service_accounts",
    "plan_workload_identity",
    "project_policy",
    "unplan_accounts",
]

ACCOUNT_ROLES = {
    "nodes": "Kinetic GKE nodes",
    "build": "Kinetic image builds",
    "jobs": "Kinetic job pods (Workload Identity)",
}
WORKLOAD_IDENTITY_ROLE = "roles/iam.workloadIdentityUser"
_IAM_API = "iam.googleapis.com"
_MANAGER_API = "cloudresourcemanager.googleapis.com"
_POLICY_ATTEMPTS = 5
Grant = tuple[str, str, dict[str, str] | None]
"""``(role, member, condition)``."""


def get_account(spec: ClusterSpec, clients: GoogleClients, email: str) -> dict[str, Any] | None:
    """The service account, or None if it does not exist (or IAM cannot be read yet)."""
    if not clients.readable(_IAM_API):
        return None
    found: dict[str, Any] | None = calling(
        f"reading service account {email}", clients.iam.get, spec.project, email
    )
    return found


def bucket_condition(spec: ClusterSpec) -> dict[str, str]:
    """Limits a storage role to the jobs bucket."""
    return {
        "title": f"kinetic-bucket-{spec.cluster}",
        "expression": f'resource.name.startsWith("projects/_/buckets/{spec.bucket}")',
    }


def _wanted_grants(spec: ClusterSpec) -> list[Grant]:
    """Nodes: write logs and metrics, pull images. Builds: push images, write logs, and their
    build logs into the jobs bucket. Job pods: the jobs bucket, nothing else."""
    nodes, build, jobs = (
        f"serviceAccount:{spec.account(role)}" for role in ("nodes", "build", "jobs")
    )
    in_bucket = bucket_condition(spec)
    wanted: list[Grant] = []
    wanted += [(role, nodes, None) for role in NODE_ROLES]
    wanted += [(role, build, None) for role in BUILD_ROLES]
    wanted += [(JOB_BUCKET_ROLE, build, in_bucket), (JOB_BUCKET_ROLE, jobs, in_bucket)]
    return wanted


def missing_grants(spec: ClusterSpec, policy: dict[str, Any]) -> list[Grant]:
    """The project role grants ``kinetic up`` makes that ``policy`` lacks."""
    return [
        (role, member, condition)
        for role, member, condition in _wanted_grants(spec)
        if add_binding(copy.deepcopy(policy), role, member, condition)
    ]


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


def _change_policy(
    doing: str,
    read: Callable[[], dict[str, Any]],
    write: Callable[[dict[str, Any]], Any],
    change: Callable[[dict[str, Any]], bool],
) -> None:
    """Read, change, write; a concurrent change (etag mismatch: ABORTED) is read again."""
    from google.api_core import exceptions

    for attempt in range(_POLICY_ATTEMPTS):
        policy = read()
        if not change(policy):
            return
        try:
            write(policy)
            return
        except exceptions.Aborted as exc:
            if attempt == _POLICY_ATTEMPTS - 1:
                raise google_error(exc, doing) from exc
        except Exception as exc:
            raise google_error(exc, doing) from exc


def _change_project_policy(
    spec: ClusterSpec, clients: GoogleClients, change: Callable[[dict[str, Any]], bool]
) -> None:
    from google.iam.v1 import policy_pb2
    from google.protobuf import json_format

    def write(policy: dict[str, Any]) -> None:
        message = json_format.ParseDict(policy, policy_pb2.Policy())
        resource = f"projects/{spec.project}"
        clients.projects.set_iam_policy(request={"resource": resource, "policy": message})

    _change_policy(
        f"writing the IAM policy of project {spec.project}",
        lambda: project_policy(spec, clients), write, change,
    )  # fmt: skip


def plan_service_accounts(spec: ClusterSpec, clients: GoogleClients) -> Plan:
    plan = Plan()
    for role, display in ACCOUNT_ROLES.items():
        email = spec.account(role)
        if get_account(spec, clients, email):
            plan.notes.append(f"service account {email} exists")
            continue

        def run(report: Report, role: str = role, display: str = display) -> None:
            tolerate_exists(
                f"creating service account {spec.account(role)}",
                clients.iam.create, spec.project, spec.account_id(role), display,
            )  # fmt: skip

        plan.steps.append(Step("create", f"service account {email}", run, display))
    policy = project_policy(spec, clients) if clients.readable(_MANAGER_API) else {}
    grants = missing_grants(spec, policy)
    if not grants:
        plan.notes.append("project roles granted")
        return plan

    def grant(report: Report) -> None:
        _change_project_policy(spec, clients, lambda policy: _grant_all(spec, policy))

    shown = ", ".join(sorted({role for role, _member, _cond in grants}))
    plan.steps.append(Step("grant", f"{len(grants)} project roles", grant, shown))
    return plan


def plan_workload_identity(spec: ClusterSpec, clients: GoogleClients) -> Plan:
    """Let the Kubernetes service account act as the jobs account (Workload Identity)."""
    email = spec.account("jobs")
    target = f"Workload Identity: {spec.namespace}/{spec.ksa} acts as {email}"

    def read() -> dict[str, Any]:
        policy: dict[str, Any] = calling(
            f"reading the policy of {email}", clients.iam.get_policy, spec.project, email
        )
        return policy

    def bind(policy: dict[str, Any]) -> bool:
        return add_binding(policy, WORKLOAD_IDENTITY_ROLE, spec.ksa_member)

    if get_account(spec, clients, email) is not None and not bind(read()):
        return Plan(notes=[target])

    def write(policy: dict[str, Any]) -> None:
        clients.iam.set_policy(spec.project, email, policy)

    def run(report: Report) -> None:
        _change_policy(f"writing the policy of {email}", read, write, bind)

    return Plan([Step("grant", target, run, WORKLOAD_IDENTITY_ROLE)])


def _remove_all(policy: dict[str, Any], members: list[str]) -> bool:
    changed = False
    for member in members:
        changed |= remove_member(policy, member)
    return changed


def unplan_accounts(spec: ClusterSpec, clients: GoogleClients) -> Plan:
    """Revoke the project roles, then delete the service accounts."""
    members = [f"serviceAccount:{spec.account(role)}" for role in ACCOUNT_ROLES]
    plan = Plan()
    if _remove_all(project_policy(spec, clients), members):

        def revoke(report: Report) -> None:
            _change_project_policy(spec, clients, lambda policy: _remove_all(policy, members))

        plan.steps.append(Step("revoke", "project roles of Kinetic's service accounts", revoke))
    for role in ACCOUNT_ROLES:
        email = spec.account(role)
        if not get_account(spec, clients, email):
            continue

        def delete(report: Report, email: str = email) -> None:
            from google.api_core import exceptions

            try:
                clients.iam.delete(spec.project, email)
            except exceptions.NotFound:
                return
            except Exception as exc:
                raise google_error(exc, f"deleting service account {email}") from exc

        plan.steps.append(Step("delete", f"service account {email}", delete))
    return plan
