"""API errors shaped like the real server's `Status` objects, and timestamp helpers.

The official client surfaces these as `ApiException(status=..., body=<Status JSON>)`, so code
under test that parses `reason` or `code` from the body sees the same fields it would on GKE.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

__all__ = ["ApiError", "now_rfc3339", "status_object", "success_status"]

_REASON_FOR_CODE = {
    400: "BadRequest",
    404: "NotFound",
    405: "MethodNotAllowed",
    409: "AlreadyExists",
    422: "Invalid",
    429: "TooManyRequests",
    500: "InternalError",
    503: "ServiceUnavailable",
    504: "Timeout",
}


def now_rfc3339() -> str:
    """The current time in the second-precision RFC 3339 form the API server writes."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def status_object(
    code: int,
    message: str,
    *,
    reason: str | None = None,
    details: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A `Status` with `status: Failure`, as every error response body carries."""
    body: dict[str, Any] = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason or _REASON_FOR_CODE.get(code, "Unknown"),
        "code": code,
    }
    if details is not None:
        body["details"] = details
    return body


def success_status(details: dict[str, Any]) -> dict[str, Any]:
    """The `Status` a delete returns when the object is gone at once."""
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "details": details,
    }


class ApiError(Exception):
    """Raised inside the simulator; the server turns it into a Status response."""

    def __init__(
        self,
        code: int,
        message: str,
        *,
        reason: str | None = None,
        details: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.body = status_object(code, message, reason=reason, details=details)

    @classmethod
    def not_found(cls, resource: str, group: str, name: str) -> ApiError:
        """`<resource>.<group> "name" not found`, as the API server words it."""
        qualified = f"{resource}.{group}" if group else resource
        return cls(
            404,
            f'{qualified} "{name}" not found',
            details={"name": name, "group": group, "kind": resource},
        )

    @classmethod
    def already_exists(cls, resource: str, group: str, name: str) -> ApiError:
        """409 for a create whose name is taken."""
        qualified = f"{resource}.{group}" if group else resource
        return cls(
            409,
            f'{qualified} "{name}" already exists',
            details={"name": name, "group": group, "kind": resource},
        )

    @classmethod
    def invalid(cls, kind: str, group: str, name: str, causes: list[tuple[str, str]]) -> ApiError:
        """422 with one cause per `(field, message)`, like field validation errors."""
        qualified = f"{kind}.{group}" if group else kind
        summary = "; ".join(f"{f}: {m}" if f else m for f, m in causes)
        return cls(
            422,
            f'{qualified} "{name}" is invalid: [{summary}]',
            details={
                "name": name,
                "group": group,
                "kind": kind,
                "causes": [
                    {"reason": "FieldValueInvalid", "message": m, "field": f} for f, m in causes
                ],
            },
        )

    @classmethod
    def bad_request(cls, message: str) -> ApiError:
        """400 for a request the server cannot act on (bad selector, bad option)."""
        return cls(400, message)
