"""The state machine behind :mod:`kinetic_testing.cloudbuild_fake`: builds, operations, logs.

Plain dictionaries in the Cloud Build v1 JSON shape, so the HTTP layer only serialises them.
Callers hold the fake's lock; nothing here is thread-safe on its own.
"""

import uuid
from collections import deque
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

__all__ = ["ApiError", "BuildOutcome", "FakeBuildState", "image_key"]

_TYPE_PREFIX = "type.googleapis.com/google.devtools.cloudbuild.v1."
_TERMINAL = {"SUCCESS", "FAILURE", "INTERNAL_ERROR", "TIMEOUT", "CANCELLED", "EXPIRED"}
_FILTER_FIELDS = {"tags", "status", "images", "id"}


class ApiError(Exception):
    """An error the fake answers with, as ``{"error": {code, message, status}}``."""

    def __init__(self, code: int, status: str, message: str) -> None:
        super().__init__(message)
        self.code, self.status, self.message = code, status, message


@dataclass(frozen=True)
class BuildOutcome:
    """How a scripted build ends, and what its log says."""

    status: Literal["SUCCESS", "FAILURE", "INTERNAL_ERROR", "TIMEOUT"] = "SUCCESS"
    log: str = ""
    """Extra log lines appended after the step lines."""
    failure_detail: str = ""


def image_key(uri: str) -> str:
    """``path:tag`` of an image URI, the way the v2 API addresses it (host dropped)."""
    first, _, rest = uri.partition("/")
    if rest and ("." in first or ":" in first or first == "localhost"):
        uri = rest
    if uri.rfind(":") <= uri.rfind("/"):
        uri += ":latest"
    return uri


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@dataclass
class FakeBuildState:
    """Every build the fake knows, in creation order."""

    polls_until_done: int = 1
    logs_bucket: str = "gs://fake-cloudbuild-logs"
    outcomes: deque[BuildOutcome] = field(default_factory=deque)
    builds: dict[str, dict[str, Any]] = field(default_factory=dict)
    operations: dict[str, str] = field(default_factory=dict)
    """Operation id -> build id."""
    polls: dict[str, int] = field(default_factory=dict)
    scripted: dict[str, BuildOutcome] = field(default_factory=dict)
    logs: dict[str, str] = field(default_factory=dict)
    images: set[str] = field(default_factory=set)
    create_requests: list[dict[str, Any]] = field(default_factory=list)
    manifest_requests: int = 0
    running: set[str] = field(default_factory=set)
    """Builds a runner is building: they stay WORKING until :meth:`finish` ends them."""

    def create(
        self, project: str, location: str, body: dict[str, Any], base_url: str
    ) -> dict[str, Any]:
        self.create_requests.append(body)
        build_id = str(uuid.uuid4())
        op_id = str(uuid.uuid4())
        steps = body.get("steps") or []
        if not steps:
            raise ApiError(400, "INVALID_ARGUMENT", "invalid build: no build steps")
        logging = (body.get("options") or {}).get("logging", "")
        if body.get("serviceAccount") and not body.get("logsBucket") and logging not in (
            "CLOUD_LOGGING_ONLY", "NONE", 5, 4,  # the REST transport sends enums as numbers
        ):  # fmt: skip
            raise ApiError(
                400, "INVALID_ARGUMENT",
                "invalid build: if 'build.service_account' is specified, the build must either "
                "(a) specify 'build.logs_bucket', or (b) use the CLOUD_LOGGING_ONLY / NONE "
                "logging options",
            )  # fmt: skip
        build = {
            **body,
            "id": build_id,
            "name": f"projects/{project}/locations/{location}/builds/{build_id}",
            "projectId": project,
            "status": "QUEUED",
            "createTime": _now(),
            "logsBucket": body.get("logsBucket") or self.logs_bucket,
            "logUrl": (
                "https://console.cloud.google.com/cloud-build/builds;"
                f"region={location}/{build_id}?project={project}"
            ),
        }
        self.builds[build_id] = build
        self.operations[op_id] = build_id
        self.polls[build_id] = 0
        self.scripted[build_id] = self.outcomes.popleft() if self.outcomes else BuildOutcome()
        self.logs[build_id] = "".join(
            f"Step #{i}: Pulling image: {s.get('name', '')}\n" for i, s in enumerate(steps)
        )
        return self._operation_json(op_id, project, location)

    def poll(self, build_id: str) -> dict[str, Any]:
        """One observation of a build: advances it toward its scripted end."""
        build = self.builds[build_id]
        if build["status"] in _TERMINAL:
            return build
        self.polls[build_id] += 1
        if build_id in self.running or self.polls[build_id] < self.polls_until_done:
            build.setdefault("startTime", _now())
            build["status"] = "WORKING"
            return build
        self._finish(build, self.scripted[build_id])
        return build

    def finish(self, build_id: str, outcome: BuildOutcome) -> None:
        """End a build a runner built (a cancelled one stays cancelled)."""
        self.running.discard(build_id)
        build = self.builds[build_id]
        if build["status"] not in _TERMINAL:
            self._finish(build, outcome)

    def final_log(self, build_id: str, outcome: BuildOutcome) -> str:
        """The whole log text of the build once it ends with ``outcome``."""
        log = self.logs[build_id]
        if outcome.status == "SUCCESS":
            pushed = "".join(
                f"Pushing {image}\n" for image in self.builds[build_id].get("images") or []
            )
            return log + pushed + "DONE\n" + outcome.log
        return log + (
            outcome.log
            or 'ERROR: build step 1 "gcr.io/cloud-builders/docker" failed: '
            "step exited with non-zero status: 1\n"
        )

    def _finish(self, build: dict[str, Any], outcome: BuildOutcome) -> None:
        build_id = build["id"]
        build["status"] = outcome.status
        build["finishTime"] = _now()
        build.setdefault("startTime", build["finishTime"])
        self.logs[build_id] = self.final_log(build_id, outcome)
        if outcome.status == "SUCCESS":
            pushed = []
            for image in build.get("images") or []:
                self.images.add(image_key(image))
                pushed.append({"name": image, "digest": "sha256:" + "0" * 64})
            build["results"] = {"images": pushed}
        else:
            build["statusDetail"] = outcome.failure_detail or "Build step failure"
            build["failureInfo"] = {
                "type": "USER_BUILD_STEP",
                "detail": build["statusDetail"],
            }

    def cancel(self, build_id: str) -> dict[str, Any]:
        build = self.builds[build_id]
        if build["status"] not in _TERMINAL:
            build["status"] = "CANCELLED"
            build["finishTime"] = _now()
        return build

    def operation(self, op_id: str) -> dict[str, Any]:
        build = self.poll(self.operations[op_id])
        project, location = build["name"].split("/")[1], build["name"].split("/")[3]
        return self._operation_json(op_id, project, location)

    def _operation_json(self, op_id: str, project: str, location: str) -> dict[str, Any]:
        build = self.builds[self.operations[op_id]]
        op: dict[str, Any] = {
            "name": f"projects/{project}/locations/{location}/operations/{op_id}",
            "metadata": {"@type": _TYPE_PREFIX + "BuildOperationMetadata", "build": build},
            "done": build["status"] in _TERMINAL,
        }
        if build["status"] == "SUCCESS":
            op["response"] = {"@type": _TYPE_PREFIX + "Build", **build}
        elif op["done"]:
            op["error"] = {"code": 2, "message": "Build failed; check build logs for details"}
        return op

    def list(
        self, project: str, location: str, flt: str, page_size: int, token: str
    ) -> dict[str, Any]:
        """Newest first, filtered by ``field="value"`` clauses joined with ``AND``."""
        clauses = [c.strip() for c in flt.split(" AND ")] if flt.strip() else []
        wanted: list[tuple[str, str]] = []
        for clause in clauses:
            name, sep, value = clause.partition("=")
            name, value = name.strip(), value.strip().strip('"')
            if not sep or name not in _FILTER_FIELDS:
                raise ValueError(f"Unsupported filter clause {clause!r}")
            wanted.append((name, value))
        prefix = f"projects/{project}/locations/{location}/builds/"
        matches = [
            b
            for b in reversed(self.builds.values())
            if b["name"].startswith(prefix) and all(_matches(b, k, v) for k, v in wanted)
        ]
        start = int(token) if token else 0
        end = start + page_size if page_size > 0 else len(matches)
        page: dict[str, Any] = {"builds": matches[start:end]}
        if end < len(matches):
            page["nextPageToken"] = str(end)
        return page


def _matches(build: dict[str, Any], key: str, value: str) -> bool:
    field_value = build.get(key)
    if isinstance(field_value, list):
        return value in field_value
    return field_value == value
