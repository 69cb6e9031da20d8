"""An in-process fake of the Cloud Build v1 REST API and of a registry's manifest endpoint.

The real ``google-cloud-build`` client talks to it over HTTP on 127.0.0.1 through its REST
transport::

    CloudBuildClient(
        transport="rest",
        client_options=ClientOptions(api_endpoint=fake.url),
        credentials=AnonymousCredentials(),
    )

It speaks the v1 JSON mapping (camelCase fields, ``Operation`` envelopes with ``@type``-tagged
``Any`` values, ``{"error": {...}}`` bodies) for create, get, list and cancel of builds and
for GetOperation. Builds advance deterministically: each read of a build or its operation
counts as one poll, and after ``polls_until_done`` polls the build ends with the outcome
scripted for it (success by default). A successful build "pushes" its ``images``, which then
answer ``GET /v2/{path}/manifests/{tag}`` with 200, so a second resolution sees the tag. Log
text lives in the fake and is read through :meth:`FakeCloudBuild.read_log`, standing in for
the log object in the real logs bucket. Only the standard library is used.

With a ``runner`` the fake builds for real instead of following a script: each created build
is handed to the runner on a thread of its own (:mod:`kinetic_testing.images.cloud_builds`
runs it with buildah) and stays ``WORKING`` until the runner returns; its log then goes to
``log_sink`` (the logs bucket, where the client reads a failed build's tail) before the build
ends, as Cloud Build writes the log before it reports the end.
"""

import re
import threading
import traceback
from collections import deque
from collections.abc import Callable
from typing import Any

from kinetic_testing.cloudbuild_state import ApiError, BuildOutcome, FakeBuildState, image_key
from kinetic_testing.gcp_fake.server import JsonHttpServer, error_body

__all__ = ["BuildOutcome", "BuildRunner", "FakeCloudBuild", "LogSink"]

BuildRunner = Callable[[dict[str, Any]], BuildOutcome]
"""Builds what a ``Build`` request (its JSON body) describes; how it ended, with its log."""
LogSink = Callable[[str, str, str], None]
"""``(logs_bucket, build_id, text)``: store a build's log where the client reads it."""

_LOC = r"projects/(?P<project>[^/]+)(?:/locations/(?P<location>[^/]+))?"
_ROUTES: list[tuple[str, re.Pattern[str], str]] = [
    ("POST", re.compile(rf"^/v1/{_LOC}/builds$"), "create"),
    ("GET", re.compile(rf"^/v1/{_LOC}/builds$"), "list"),
    ("GET", re.compile(rf"^/v1/{_LOC}/builds/(?P<id>[^/:]+)$"), "get"),
    ("POST", re.compile(rf"^/v1/{_LOC}/builds/(?P<id>[^/:]+):cancel$"), "cancel"),
    ("GET", re.compile(rf"^/v1/{_LOC}/operations/(?P<op>[^/:]+)$"), "operation"),
    ("GET", re.compile(r"^/v1/operations/(?P<opname>.+)$"), "operation"),
    ("GET", re.compile(r"^/v2/(?P<path>.+)/manifests/(?P<ref>[^/]+)$"), "manifest"),
    ("HEAD", re.compile(r"^/v2/(?P<path>.+)/manifests/(?P<ref>[^/]+)$"), "manifest"),
]


class FakeCloudBuild(JsonHttpServer):
    """A threaded HTTP server on a random 127.0.0.1 port. Use as a context manager.

    :attr:`url` (``http://127.0.0.1:<port>``) is both the API and the registry endpoint.
    """

    def __init__(
        self,
        *,
        polls_until_done: int = 1,
        runner: BuildRunner | None = None,
        log_sink: LogSink | None = None,
    ) -> None:
        super().__init__()
        self.state = FakeBuildState(polls_until_done=polls_until_done)
        self._runner = runner
        self._log_sink = log_sink
        self._errors: deque[ApiError | None] = deque()
        self._registry_errors: deque[int] = deque()
        self._lock = threading.Lock()

    # -- scripting and inspection ----------------------------------------------------------
    def script(self, outcome: BuildOutcome) -> None:
        """Queue the outcome of the next created build (FIFO; default is success)."""
        with self._lock:
            self.state.outcomes.append(outcome)

    def fail_next_request(self, *, code: int, status: str, message: str, skip: int = 0) -> None:
        """Make an API call (any route except the registry) answer with this error.

        ``skip`` lets that many calls through first (``skip=1``: fail the first poll after a
        create). Queued failures apply in order.
        """
        with self._lock:
            self._errors.extend([None] * skip)
            self._errors.append(ApiError(code, status, message))

    def fail_next_registry_check(self, code: int) -> None:
        """Make the next manifest request answer with HTTP ``code`` (e.g. 403)."""
        with self._lock:
            self._registry_errors.append(code)

    def add_image(self, uri: str) -> None:
        """Pretend ``uri`` was pushed earlier, so the registry reports it."""
        with self._lock:
            self.state.images.add(image_key(uri))

    def has_image(self, uri: str) -> bool:
        with self._lock:
            return image_key(uri) in self.state.images

    @property
    def create_calls(self) -> int:
        with self._lock:
            return len(self.state.create_requests)

    @property
    def manifest_requests(self) -> int:
        with self._lock:
            return self.state.manifest_requests

    @property
    def create_requests(self) -> list[dict[str, Any]]:
        """The JSON ``Build`` bodies received by create, oldest first."""
        with self._lock:
            return [dict(r) for r in self.state.create_requests]

    def build(self, build_id: str) -> dict[str, Any]:
        with self._lock:
            return dict(self.state.builds[build_id])

    def read_log(self, logs_bucket: str, build_id: str) -> str:
        """The build's log text, as the object ``{logs_bucket}/log-{id}.txt`` would hold it."""
        with self._lock:
            build = self.state.builds.get(build_id) or {}
            if logs_bucket != build.get("logsBucket") or build_id not in self.state.logs:
                raise FileNotFoundError(f"{logs_bucket}/log-{build_id}.txt")
            return self.state.logs[build_id]

    def _run(self, runner: BuildRunner, build_id: str, body: dict[str, Any]) -> None:
        """Build on this thread; store the log, then end the build."""
        try:
            outcome = runner(body)
        except Exception:  # a defect of the runner: the build fails with its traceback
            outcome = BuildOutcome("INTERNAL_ERROR", log=traceback.format_exc())
        with self._lock:
            text = self.state.final_log(build_id, outcome)
            bucket = self.state.builds[build_id]["logsBucket"]
        if self._log_sink is not None:
            try:
                self._log_sink(bucket, build_id, text)
            except Exception:  # the build still ends; the client says it could not read the log
                traceback.print_exc()
        with self._lock:
            self.state.finish(build_id, outcome)

    # -- request handling (called from server threads) ------------------------------------
    def respond(
        self, method: str, path: str, query: dict[str, list[str]], body: Any
    ) -> tuple[int, Any]:
        try:
            return self._handle(method, path, query, body)
        except ApiError as exc:
            return exc.code, error_body(exc.code, exc.status, exc.message)

    def _handle(
        self, method: str, path: str, query: dict[str, list[str]], body: Any
    ) -> tuple[int, Any]:
        for route_method, pattern, action in _ROUTES:
            match = pattern.match(path)
            if route_method != method or not match:
                continue
            groups = match.groupdict()
            with self._lock:
                if action == "manifest":
                    self.state.manifest_requests += 1
                    if self._registry_errors:
                        code = self._registry_errors.popleft()
                        return code, {"errors": [{"code": "DENIED", "message": "denied"}]}
                    found = f"{groups['path']}:{groups['ref']}" in self.state.images
                    if found:
                        return 200, {"schemaVersion": 2, "mediaType": "application/json"}
                    return 404, {"errors": [{"code": "MANIFEST_UNKNOWN", "message": "unknown"}]}
                if self._errors:
                    error = self._errors.popleft()
                    if error is not None:
                        raise error
                return self._dispatch(action, groups, query, body)
        raise ApiError(404, "NOT_FOUND", f"No route for {method} {path}")

    def _dispatch(
        self, action: str, groups: dict[str, str], query: dict[str, list[str]], body: Any
    ) -> tuple[int, Any]:
        state = self.state
        location = groups.get("location") or "global"
        if action == "create":
            if not isinstance(body, dict):
                raise ApiError(400, "INVALID_ARGUMENT", "Request body must be a Build")
            operation = state.create(groups["project"], location, body, self.url)
            if self._runner is not None:
                build_id = operation["metadata"]["build"]["id"]
                state.running.add(build_id)
                threading.Thread(
                    target=self._run, args=(self._runner, build_id, body),
                    name=f"cloudbuild-{build_id[:8]}", daemon=True,
                ).start()  # fmt: skip
            return 200, operation
        if action == "list":
            size = int(query.get("pageSize", ["0"])[0] or 0)
            token = query.get("pageToken", [""])[0]
            flt = query.get("filter", [""])[0]
            try:
                return 200, state.list(groups["project"], location, flt, size, token)
            except ValueError as exc:
                raise ApiError(400, "INVALID_ARGUMENT", str(exc)) from exc
        if action == "operation":
            op_id = groups.get("op") or groups["opname"].rsplit("/", 1)[-1]
            if op_id not in state.operations:
                raise ApiError(404, "NOT_FOUND", f"Operation {op_id} not found")
            return 200, state.operation(op_id)
        build_id = groups["id"]
        if build_id not in state.builds:
            raise ApiError(404, "NOT_FOUND", f"Build {build_id} not found")
        if action == "cancel":
            return 200, state.cancel(build_id)
        return 200, state.poll(build_id)
