"""Fakes of the smaller APIs ``kinetic up`` uses: Service Usage, Compute machine types,
Resource Manager (project and its IAM policy), IAM service accounts and Artifact Registry, and
an OAuth token endpoint.

Service Usage and Artifact Registry answer changes with ``google.longrunning`` operations that
are done after ``polls_until_done`` reads (``fail_operation`` makes the next one of a route end
in an error, its change not made). IAM policies keep an etag, and a write with a stale one is
refused (ABORTED), so read-modify-write code is exercised as against Google.
"""

from __future__ import annotations

import copy
import hashlib
import itertools
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kinetic_testing.gcp_fake.server import ApiError, RoutedServer

__all__ = ["FakeApis"]

_SU = "type.googleapis.com/google.api.serviceusage.v1."
_AR = "type.googleapis.com/google.devtools.artifactregistry.v1."
_PROJECT = r"/v1/projects/(?P<project>[^/]+)"
_SA = _PROJECT + r"/serviceAccounts/(?P<email>[^/:]+)"
_REPO = _PROJECT + r"/locations/(?P<location>[^/]+)/repositories"
DEFAULT_MACHINE_TYPES = ("e2-standard-4", "e2-standard-8", "n2-standard-4", "n1-standard-4")


@dataclass
class _LongRunning:
    name: str
    polls_left: int
    response: dict[str, Any]
    metadata_type: str
    effect: Any = None
    error: str = ""
    target: str = ""
    """What it changes; reading that counts as a poll too (operations run on their own)."""
    done: bool = False

    def render(self) -> dict[str, Any]:
        rendered: dict[str, Any] = {"name": self.name, "metadata": {"@type": self.metadata_type}}
        if self.done and self.error:
            rendered.update(done=True, error={"code": 13, "message": self.error})
        elif self.done:
            rendered.update(done=True, response=self.response)
        return rendered


def _etag(policy: dict[str, Any]) -> str:
    bindings = sorted(
        (b["role"], tuple(sorted(b.get("members", []))), str(b.get("condition")))
        for b in policy.get("bindings", [])
    )
    return hashlib.sha256(repr(bindings).encode()).hexdigest()[:12]


@dataclass
class FakeApis:
    server: RoutedServer
    polls_until_done: int = 1
    project_numbers: dict[str, str] = field(default_factory=dict)
    enabled: dict[str, set[str]] = field(default_factory=dict)
    machine_types: dict[str, set[str]] = field(default_factory=dict)
    """Zone -> machine types offered there; a zone not listed offers the defaults."""
    project_policies: dict[str, dict[str, Any]] = field(default_factory=dict)
    service_accounts: dict[str, dict[str, Any]] = field(default_factory=dict)
    sa_policies: dict[str, dict[str, Any]] = field(default_factory=dict)
    repositories: dict[str, dict[str, Any]] = field(default_factory=dict)
    operations: dict[str, _LongRunning] = field(default_factory=dict)
    failing: dict[str, str] = field(default_factory=dict)
    """Route name -> error message for the next operation that route starts."""
    access_token: str = ""
    """What the token endpoint hands out (refreshing any credentials whose ``token_uri`` is
    ``{url}/token``); empty: it refuses."""
    _ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1))

    def __post_init__(self) -> None:
        self._routes_usage_and_projects()
        self._routes_iam_and_registry()
        self.server.route("POST", r"/token", "oauth2.token", self._token)

    def _routes_usage_and_projects(self) -> None:
        route = self.server.route
        route("GET", _PROJECT + r"/services/(?P<service>[^/:]+)", "serviceusage.get", self._svc)
        route("POST", _PROJECT + r"/services:batchEnable", "serviceusage.enable", self._enable)
        route("GET", r"/v1/operations/(?P<op>[^/]+)", "serviceusage.operations.get", self._lro)
        route(
            "GET",
            r"/compute/v1/projects/(?P<project>[^/]+)/zones/(?P<zone>[^/]+)/machineTypes/"
            r"(?P<type>[^/]+)",
            "compute.machineTypes.get",
            self._machine_type,
            service="compute.googleapis.com",
        )
        manager = "cloudresourcemanager.googleapis.com"
        route("GET", r"/v3/projects/(?P<project>[^/:]+)", "resourcemanager.get", self._project,
              service=manager)  # fmt: skip
        route(
            "POST", r"/v3/projects/(?P<project>[^/:]+):getIamPolicy", "resourcemanager.getIam",
            self._get_project_policy, service=manager,
        )  # fmt: skip
        route(
            "POST", r"/v3/projects/(?P<project>[^/:]+):setIamPolicy", "resourcemanager.setIam",
            self._set_project_policy, service=manager,
        )  # fmt: skip

    def _routes_iam_and_registry(self) -> None:
        def route(method: str, pattern: str, name: str, handler: Any) -> None:
            service = name.split(".", maxsplit=1)[0] + ".googleapis.com"
            self.server.route(method, pattern, name, handler, service=service)

        route("GET", _SA, "iam.serviceAccounts.get", self._get_sa)
        route("POST", _PROJECT + r"/serviceAccounts", "iam.serviceAccounts.create", self._new_sa)
        route("DELETE", _SA, "iam.serviceAccounts.delete", self._delete_sa)
        route("POST", _SA + r":getIamPolicy", "iam.serviceAccounts.getIam", self._get_sa_policy)
        route("POST", _SA + r":setIamPolicy", "iam.serviceAccounts.setIam", self._set_sa_policy)
        route("GET", _REPO + r"/(?P<repo>[^/:]+)", "artifactregistry.get", self._get_repo)
        route("POST", _REPO, "artifactregistry.create", self._create_repo)
        route("DELETE", _REPO + r"/(?P<repo>[^/:]+)", "artifactregistry.delete", self._delete_repo)
        route(
            "GET", _PROJECT + r"/locations/(?P<location>[^/]+)/operations/(?P<op>[^/]+)",
            "artifactregistry.operations.get", self._lro,
        )  # fmt: skip

    # -- scripting ---------------------------------------------------------------------------

    def fail_operation(self, route: str, message: str = "injected operation failure") -> None:
        """The next operation route ``route`` starts (``serviceusage.enable``,
        ``artifactregistry.create``...) ends in an error, and its change is not made."""
        with self.server.lock:
            self.failing[route] = message

    def enable(self, project: str, *services: str) -> None:
        with self.server.lock:
            self.enabled.setdefault(project, set()).update(services)

    def is_enabled(self, project: str, service: str) -> bool:
        return service in self.enabled.get(project, set())

    def credentials_file(self, path: Path, project: str = "kinetic-test") -> Path:
        """Application Default Credentials whose token comes from this fake: a service account
        key (a fresh RSA key; ``token_uri`` is the fake's) for ``GOOGLE_APPLICATION_CREDENTIALS``.
        google-auth signs its grant and asks the fake, as it would ask Google."""
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric import rsa

        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        pem = key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        ).decode()
        path.write_text(
            json.dumps(
                {
                    "type": "service_account",
                    "project_id": project,
                    "private_key_id": "kinetic-test-key",
                    "private_key": pem,
                    "client_email": f"kinetic-test@{project}.iam.gserviceaccount.com",
                    "client_id": "100000000000000000001",
                    "token_uri": f"{self.server.url}/token",
                }
            )
        )
        return path

    # -- helpers ----------------------------------------------------------------------------

    def _number(self, project: str) -> str:
        return self.project_numbers.setdefault(project, str(100000 + len(self.project_numbers)))

    def _operation(
        self,
        route: str,
        prefix: str,
        response: dict[str, Any],
        metadata: str,
        effect: Any,
        target: str,
    ) -> Any:
        name = f"{prefix}operations/op-{next(self._ids)}"
        op = _LongRunning(
            name, max(1, self.polls_until_done), response, metadata, effect,
            error=self.failing.pop(route, ""), target=target,
        )  # fmt: skip
        self.operations[name.rsplit("/", 1)[-1]] = op
        return op.render()

    def _poll(self, op: _LongRunning) -> None:
        if op.done:
            return
        op.polls_left -= 1
        if op.polls_left <= 0:
            op.done = True
            if op.effect is not None and not op.error:
                op.effect()

    def _advance(self, target: str) -> None:
        """One poll of every operation on ``target``: it progresses whether or not its starter
        still watches it (say, the answer that named it was lost)."""
        for op in list(self.operations.values()):
            if op.target == target:
                self._poll(op)

    def _lro(self, g: dict[str, str], _q: Any, _b: Any) -> Any:
        op = self.operations.get(g["op"])
        if op is None:
            raise ApiError(404, f"operation {g['op']} not found")
        self._poll(op)
        return op.render()

    # -- Service Usage -----------------------------------------------------------------------

    def _svc(self, g: dict[str, str], _q: Any, _b: Any) -> Any:
        self._advance(f"projects/{g['project']}/services")
        on = g["service"] in self.enabled.get(g["project"], set())
        return {
            "name": f"projects/{self._number(g['project'])}/services/{g['service']}",
            "parent": f"projects/{self._number(g['project'])}",
            "state": "ENABLED" if on else "DISABLED",
        }

    def _enable(self, g: dict[str, str], _q: Any, body: Any) -> Any:
        wanted = list((body or {}).get("serviceIds") or [])
        if not wanted:
            raise ApiError(400, "serviceIds is required")

        def effect() -> None:
            self.enabled.setdefault(g["project"], set()).update(wanted)

        return self._operation("serviceusage.enable", "",
                               {"@type": _SU + "BatchEnableServicesResponse"},
                               _SU + "OperationMetadata", effect,
                               f"projects/{g['project']}/services")  # fmt: skip

    # -- Compute -----------------------------------------------------------------------------

    def _machine_type(self, g: dict[str, str], _q: Any, _b: Any) -> Any:
        offered = self.machine_types.get(g["zone"], set(DEFAULT_MACHINE_TYPES))
        if g["type"] not in offered:
            raise ApiError(404, f"The resource 'machineTypes/{g['type']}' was not found")
        return {"name": g["type"], "zone": g["zone"], "guestCpus": 4, "memoryMb": 16384}

    # -- Resource Manager --------------------------------------------------------------------

    def _project(self, g: dict[str, str], _q: Any, _b: Any) -> Any:
        return {
            "name": f"projects/{self._number(g['project'])}",
            "projectId": g["project"],
            "state": "ACTIVE",
        }

    def _policy(self, store: dict[str, dict[str, Any]], key: str) -> dict[str, Any]:
        policy = copy.deepcopy(store.get(key) or {})
        policy.setdefault("bindings", [])
        policy["etag"] = _etag(policy)
        if any("condition" in b for b in policy["bindings"]):
            policy["version"] = 3
        return policy

    def _set_policy(self, store: dict[str, dict[str, Any]], key: str, body: Any) -> Any:
        policy = copy.deepcopy((body or {}).get("policy") or {})
        current = self._policy(store, key)
        if policy.get("etag") and policy["etag"] != current["etag"]:
            raise ApiError(409, "There were concurrent policy changes.", "ABORTED")
        if any("condition" in b for b in policy.get("bindings", [])) and policy.get("version") != 3:
            raise ApiError(400, "Conditional bindings need policy version 3.")
        policy.pop("etag", None)
        store[key] = policy
        return self._policy(store, key)

    def _get_project_policy(self, g: dict[str, str], _q: Any, _b: Any) -> Any:
        return self._policy(self.project_policies, g["project"])

    def _set_project_policy(self, g: dict[str, str], _q: Any, body: Any) -> Any:
        return self._set_policy(self.project_policies, g["project"], body)

    # -- IAM service accounts ---------------------------------------------------------------

    def _sa_or_404(self, email: str) -> dict[str, Any]:
        if email not in self.service_accounts:
            raise ApiError(404, f"Service account {email} does not exist.")
        return self.service_accounts[email]

    def _get_sa(self, g: dict[str, str], _q: Any, _b: Any) -> Any:
        return copy.deepcopy(self._sa_or_404(g["email"]))

    def _new_sa(self, g: dict[str, str], _q: Any, body: Any) -> Any:
        account_id = (body or {}).get("accountId") or ""
        if not 6 <= len(account_id) <= 30:
            raise ApiError(400, f"accountId {account_id!r} must be 6 to 30 characters")
        email = f"{account_id}@{g['project']}.iam.gserviceaccount.com"
        if email in self.service_accounts:
            raise ApiError(409, f"Service account {account_id} already exists.")
        shown = ((body or {}).get("serviceAccount") or {}).get("displayName", "")
        self.service_accounts[email] = {
            "name": f"projects/{g['project']}/serviceAccounts/{email}",
            "projectId": g["project"], "email": email, "displayName": shown,
            "uniqueId": str(len(self.service_accounts) + 1),
        }  # fmt: skip
        return copy.deepcopy(self.service_accounts[email])

    def _delete_sa(self, g: dict[str, str], _q: Any, _b: Any) -> Any:
        self._sa_or_404(g["email"])
        del self.service_accounts[g["email"]]
        self.sa_policies.pop(g["email"], None)
        return {}

    def _get_sa_policy(self, g: dict[str, str], _q: Any, _b: Any) -> Any:
        self._sa_or_404(g["email"])
        return self._policy(self.sa_policies, g["email"])

    def _set_sa_policy(self, g: dict[str, str], _q: Any, body: Any) -> Any:
        self._sa_or_404(g["email"])
        return self._set_policy(self.sa_policies, g["email"], body)

    # -- Artifact Registry ------------------------------------------------------------------

    def _repo_name(self, g: dict[str, str], repo: str) -> str:
        return f"projects/{g['project']}/locations/{g['location']}/repositories/{repo}"

    def _get_repo(self, g: dict[str, str], _q: Any, _b: Any) -> Any:
        name = self._repo_name(g, g["repo"])
        self._advance(name)
        if name not in self.repositories:
            raise ApiError(404, f"Repository {name} not found")
        return copy.deepcopy(self.repositories[name])

    def _create_repo(self, g: dict[str, str], query: dict[str, list[str]], body: Any) -> Any:
        repo_id = (query.get("repositoryId") or [""])[0]
        name = self._repo_name(g, repo_id)
        if not repo_id:
            raise ApiError(400, "repositoryId is required")
        if name in self.repositories:
            raise ApiError(409, f"the repository already exists: {name}")
        repository = {**(body or {}), "name": name}

        def effect() -> None:
            self.repositories[name] = repository

        prefix = f"projects/{g['project']}/locations/{g['location']}/"
        return self._operation("artifactregistry.create", prefix,
                               {"@type": _AR + "Repository", **repository},
                               _AR + "OperationMetadata", effect, name)  # fmt: skip

    def _delete_repo(self, g: dict[str, str], _q: Any, _b: Any) -> Any:
        name = self._repo_name(g, g["repo"])
        if name not in self.repositories:
            raise ApiError(404, f"Repository {name} not found")

        def effect() -> None:
            self.repositories.pop(name, None)

        prefix = f"projects/{g['project']}/locations/{g['location']}/"
        empty = {"@type": "type.googleapis.com/google.protobuf.Empty"}
        return self._operation("artifactregistry.delete", prefix, empty,
                               _AR + "OperationMetadata", effect, name)  # fmt: skip

    # -- OAuth -------------------------------------------------------------------------------

    def _token(self, _g: dict[str, str], _q: Any, body: Any) -> Any:
        if not self.access_token or not (body or {}).get("grant_type"):
            raise ApiError(400, "invalid_grant: the fake has no token to give")
        return {"access_token": self.access_token, "expires_in": 3600, "token_type": "Bearer"}
