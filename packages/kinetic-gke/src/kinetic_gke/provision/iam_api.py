"""IAM service accounts and their policies over REST, and policy bindings made idempotent.

``google-cloud-iam`` speaks only gRPC for service accounts, so these five calls go over
google-auth's authorized HTTP session (the same credentials and endpoint override as every
other client); errors are mapped by ``google.api_core``'s own HTTP-to-exception table.
"""

from __future__ import annotations

from typing import Any

from kinetic_gke import settings as gke_settings

__all__ = ["IamApi", "add_binding", "remove_member"]

_IAM = "https://iam.googleapis.com"
_SCOPES = ("https://www.googleapis.com/auth/cloud-platform",)


class IamApi:
    """Service accounts of a project, and the IAM policy on each."""

    def __init__(self) -> None:
        import google.auth
        from google.auth.transport.requests import AuthorizedSession

        endpoint = gke_settings.GCP_API_ENDPOINT.from_env()
        if endpoint and endpoint.startswith("http://"):
            from google.auth.credentials import AnonymousCredentials

            credentials: Any = AnonymousCredentials()  # type: ignore[no-untyped-call]
        else:
            credentials, _ = google.auth.default(scopes=_SCOPES)
        self._base = (endpoint or _IAM).rstrip("/")
        self._session = AuthorizedSession(credentials)  # type: ignore[no-untyped-call]

    def _call(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        from google.api_core import exceptions

        url = f"{self._base}/v1/{path}"
        response = self._session.request(method, url, json=body)  # type: ignore[no-untyped-call]
        if response.status_code >= 400:
            raise exceptions.from_http_response(response)  # type: ignore[no-untyped-call]
        return response.json() if response.content else {}

    def get(self, project: str, email: str) -> dict[str, Any] | None:
        from google.api_core import exceptions

        try:
            found: dict[str, Any] = self._call("GET", f"projects/{project}/serviceAccounts/{email}")
        except exceptions.NotFound:
            return None
        return found

    def create(self, project: str, account_id: str, display_name: str) -> dict[str, Any]:
        body = {"accountId": account_id, "serviceAccount": {"displayName": display_name}}
        created: dict[str, Any] = self._call("POST", f"projects/{project}/serviceAccounts", body)
        return created

    def delete(self, project: str, email: str) -> None:
        self._call("DELETE", f"projects/{project}/serviceAccounts/{email}")

    def get_policy(self, project: str, email: str) -> dict[str, Any]:
        path = f"projects/{project}/serviceAccounts/{email}:getIamPolicy"
        policy: dict[str, Any] = self._call("POST", path, {})
        return policy

    def set_policy(self, project: str, email: str, policy: dict[str, Any]) -> None:
        path = f"projects/{project}/serviceAccounts/{email}:setIamPolicy"
        self._call("POST", path, {"policy": policy})


def _same_condition(binding: dict[str, Any], condition: dict[str, str] | None) -> bool:
    found = binding.get("condition") or None
    if condition is None or found is None:
        return found is None and condition is None
    return bool(found.get("expression") == condition.get("expression"))


def add_binding(
    policy: dict[str, Any], role: str, member: str, condition: dict[str, str] | None = None
) -> bool:
    """Grant ``role`` to ``member`` in ``policy`` (a JSON policy); False if it already was."""
    bindings: list[dict[str, Any]] = policy.setdefault("bindings", [])
    for binding in bindings:
        if binding.get("role") == role and _same_condition(binding, condition):
            members = binding.setdefault("members", [])
            if member in members:
                return False
            members.append(member)
            return True
    new: dict[str, Any] = {"role": role, "members": [member]}
    if condition is not None:
        new["condition"] = condition
        policy["version"] = 3
    bindings.append(new)
    return True


def remove_member(policy: dict[str, Any], member: str) -> bool:
    """Take ``member`` out of every binding of ``policy``; False if it was in none."""
    changed = False
    kept = []
    for binding in policy.get("bindings", []):
        members = binding.get("members", [])
        if member in members:
            members.remove(member)
            changed = True
        if members:
            kept.append(binding)
    policy["bindings"] = kept
    return changed
