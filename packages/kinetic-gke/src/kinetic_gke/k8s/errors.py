"""Kubernetes API errors as Kinetic errors, with the HTTP status and the API's reason kept.

Callers branch on the class or on ``status``/``reason``, never on the message's words.
"""

from __future__ import annotations

import json

from kinetic_protocol import BackendError

__all__ = [
    "AlreadyExists",
    "ApiUnreachable",
    "BadRequest",
    "Conflict",
    "KubeApiError",
    "NotFound",
    "PermissionDenied",
    "translate",
]

_BODY_LIMIT = 300


class KubeApiError(BackendError):
    """The API answered with an error; ``status`` is the HTTP code, ``reason`` the API's."""

    def __init__(self, message: str, *, status: int | None = None, reason: str = "") -> None:
        super().__init__(message)
        self.status = status
        self.reason = reason


class NotFound(KubeApiError):
    """HTTP 404: the object does not exist."""


class AlreadyExists(KubeApiError):
    """HTTP 409: an object of that name exists already."""


class Conflict(KubeApiError):
    """HTTP 409 for a write whose ``resourceVersion`` precondition no longer holds: the
    object changed since it was read."""


class BadRequest(KubeApiError):
    """HTTP 400: refused as it stands (for example the log of a container not started)."""


class PermissionDenied(KubeApiError):
    """HTTP 401/403: the credentials cannot do this."""


class ApiUnreachable(KubeApiError):
    """No answer at all: the connection failed."""


_BY_STATUS: dict[int, type[KubeApiError]] = {
    404: NotFound,
    409: AlreadyExists,
    400: BadRequest,
    401: PermissionDenied,
    403: PermissionDenied,
}


def translate(exc: Exception, doing: str) -> KubeApiError:
    """The Kinetic error for ``exc`` raised while ``doing`` (a phrase: "reading Job x")."""
    from kubernetes.client.exceptions import ApiException

    if not isinstance(exc, ApiException):
        return ApiUnreachable(f"{doing}: cannot reach the Kubernetes API ({exc})")
    raw: object = exc.body or ""  # typed str, but bytes when the body was not preloaded
    body = raw.decode() if isinstance(raw, bytes) else str(raw)
    try:
        document = json.loads(body)
    except ValueError:
        document = {}
    if not isinstance(document, dict):
        document = {}
    message = str(document.get("message", body))[:_BODY_LIMIT]
    reason = str(document.get("reason", "") or exc.reason or "")
    kind = _BY_STATUS.get(exc.status or 0, KubeApiError)
    if kind is AlreadyExists and reason == "Conflict":
        kind = Conflict
    if kind is NotFound:
        text = f"{doing}: not found ({message})"
    elif kind is AlreadyExists:
        text = f"{doing}: already exists ({message})"
    elif kind is Conflict:
        text = f"{doing}: changed meanwhile ({message})"
    elif kind is BadRequest:
        text = f"{doing}: refused ({message})"
    elif kind is PermissionDenied:
        text = (
            f"{doing}: permission denied ({message}). Check that your credentials can reach "
            "the cluster: run `gcloud auth login`, make sure gke-gcloud-auth-plugin is "
            "installed (`gcloud components install gke-gcloud-auth-plugin`), and that you "
            "have the IAM role roles/container.developer."
        )
    else:
        text = f"{doing}: Kubernetes API error {exc.status} ({message})"
    return kind(text, status=exc.status, reason=reason)
