"""Build images on Cloud Build and skip builds whose tag already exists.

:class:`ImageBuilder` wraps the ``google-cloud-build`` client (imported lazily) and a
:class:`~kinetic_gke.images.registry.RegistryClient`. Every outside dependency is injectable, so
tests run the real client against a local fake: the Cloud Build client, the registry endpoint,
the function that reads a build's log (Cloud Build writes it to ``{logs_bucket}/log-{id}.txt``)
and, optionally, a function that uploads the build context to GCS.

Without an uploader the build context (a Dockerfile and a requirements file, a few KiB; with an
unpublished Kinetic also its wheels, about 110 KiB) travels inside the build request: a first
step unpacks it from environment variables. That needs no
bucket and no extra permissions; contexts over :data:`MAX_INLINE_CONTEXT` need an uploader.
"""

import base64
import concurrent.futures
import gzip
import io
import logging
import tarfile
from collections.abc import Callable
from typing import Any

import structlog

from kinetic_gke.images.dockerfile import BuildContext
from kinetic_gke.images.registry import RegistryClient
from kinetic_protocol.errors import BackendError, ConfigError

__all__ = [
    "DOCKER_BUILDER",
    "INLINE_CHUNK",
    "MAX_INLINE_CONTEXT",
    "ImageBuildError",
    "ImageBuilder",
    "LogFetcher",
    "SourceUploader",
    "build_request",
    "context_tarball",
    "read_gcs_build_log",
]

_log = structlog.wrap_logger(logging.getLogger(__name__))

DOCKER_BUILDER = "gcr.io/cloud-builders/docker"
INLINE_CHUNK = 96 * 1024
"""Largest piece of the base64 context in one environment variable of the unpack step (Linux
limits one variable to 128 KiB)."""
MAX_INLINE_CONTEXT = 4 * INLINE_CHUNK
"""Largest base64 context sent inside the request, in pieces of :data:`INLINE_CHUNK`: enough
for requirements and the wheels of an unpublished Kinetic (about 150 KiB encoded)."""
_CONTEXT_VARIABLE = "KINETIC_BUILD_CONTEXT"
_TERMINAL_FAILURES = {"FAILURE", "INTERNAL_ERROR", "TIMEOUT", "CANCELLED", "EXPIRED"}

LogFetcher = Callable[[str, str], str]
"""``(logs_bucket, build_id) -> full log text``."""
SourceUploader = Callable[[bytes, str], tuple[str, str]]
"""``(tar.gz bytes, object name) -> (bucket, object)`` of the uploaded context."""


class ImageBuildError(BackendError):
    """An image could not be built: the build failed, or Cloud Build refused the request."""

    def __init__(
        self,
        message: str,
        *,
        build_id: str = "",
        status: str = "",
        log_url: str = "",
        log_tail: str = "",
    ) -> None:
        super().__init__(message)
        self.build_id = build_id
        self.status = status
        self.log_url = log_url
        self.log_tail = log_tail


def read_gcs_build_log(logs_bucket: str, build_id: str) -> str:
    """Read ``log-{build_id}.txt`` from the build's logs bucket with google-cloud-storage."""
    from google.cloud.storage import Client

    bucket, _, prefix = logs_bucket.removeprefix("gs://").partition("/")
    prefix = f"{prefix.rstrip('/')}/" if prefix else ""
    blob = Client().bucket(bucket).blob(f"{prefix}log-{build_id}.txt")
    return str(blob.download_as_text())


def context_tarball(files: dict[str, bytes]) -> bytes:
    """A gzipped tar of ``files`` that is byte-identical for identical input."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for path in sorted(files):
            info = tarfile.TarInfo(path)
            info.size = len(files[path])
            info.mode = 0o644
            tar.addfile(info, io.BytesIO(files[path]))
    return gzip.compress(raw.getvalue(), mtime=0)


def build_request(
    context: BuildContext,
    uri: str,
    *,
    source: tuple[str, str] | None = None,
    timeout_seconds: int = 3600,
    service_account: str = "",
    logs_bucket: str = "",
) -> dict[str, Any]:
    """The Cloud Build ``Build`` (as a mapping) that builds ``context`` and pushes ``uri``.

    ``service_account`` (a resource name, ``projects/P/serviceAccounts/EMAIL``) runs the build
    as that account; Cloud Build then needs the log written to a bucket of ours
    (``logs_bucket``, ``gs://bucket[/prefix]``) instead of its default one.
    """
    steps: list[dict[str, Any]] = []
    build: dict[str, Any] = {}
    if service_account:
        if not logs_bucket:
            raise ConfigError(
                f"A build running as {service_account} needs a logs bucket to write its log "
                "to; none was given."
            )
        build.update(
            service_account=service_account,
            logs_bucket=logs_bucket,
            options={"logging": "GCS_ONLY"},
        )
    if source is None:
        encoded = base64.b64encode(context_tarball(context.files)).decode("ascii")
        if len(encoded) > MAX_INLINE_CONTEXT:
            raise ConfigError(
                f"The image build context for {uri} is {len(encoded)} bytes encoded, more than "
                f"the {MAX_INLINE_CONTEXT} that fit in a build request. Shorten the "
                "requirements, or use container_image='prebuilt'."
            )
        pieces = [encoded[i : i + INLINE_CHUNK] for i in range(0, len(encoded), INLINE_CHUNK)]
        names = [_CONTEXT_VARIABLE + (f"_{i}" if i else "") for i in range(len(pieces))]
        # "$$" is Cloud Build's escape for a literal "$"; printf joins the pieces in order.
        joined = " ".join(f'"$${name}"' for name in names)
        steps.append(
            {
                "id": "unpack-context",
                "name": DOCKER_BUILDER,
                "entrypoint": "bash",
                "args": ["-c", f"printf %s {joined} | base64 -d | tar -xzf -"],
                "env": [f"{name}={piece}" for name, piece in zip(names, pieces, strict=True)],
            }
        )
    else:
        build["source"] = {"storage_source": {"bucket": source[0], "object_": source[1]}}
    steps.append(
        {
            "id": "docker-build",
            "name": DOCKER_BUILDER,
            "args": ["build", "--tag", uri, "--file", "Dockerfile", "."],
        }
    )
    build.update(
        steps=steps,
        images=[uri],
        tags=["kinetic", f"kinetic-{context.category}", f"kinetic-{context.content_hash[:16]}"],
        timeout={"seconds": timeout_seconds},
    )
    return build


class ImageBuilder:
    """Builds images with Cloud Build in ``project``/``location`` and checks tags first."""

    def __init__(
        self,
        *,
        project: str,
        location: str,
        client: Any | None = None,
        registry: RegistryClient | None = None,
        log_fetcher: LogFetcher = read_gcs_build_log,
        source_uploader: SourceUploader | None = None,
        timeout: float = 3600.0,
        poll_interval: tuple[float, float] = (2.0, 20.0),
        log_tail_lines: int = 40,
        service_account: str = "",
        logs_bucket: str = "",
    ) -> None:
        self.project = project
        self.location = location
        self.service_account = service_account
        """The email builds run as (the build account ``kinetic up`` made); empty: Cloud
        Build's default."""
        self.logs_bucket = logs_bucket
        self._client = client
        self.registry = registry or RegistryClient.from_settings()
        self._log_fetcher = log_fetcher
        self._source_uploader = source_uploader
        self._timeout = timeout
        self._poll_interval = poll_interval
        self._tail_lines = log_tail_lines

    @property
    def client(self) -> Any:
        """The Cloud Build client; created on first use with default credentials, over REST
        to ``KINETIC_GCP_API_ENDPOINT`` when that is set (as every Google client Kinetic
        makes)."""
        if self._client is None:
            from google.auth.exceptions import DefaultCredentialsError
            from google.cloud.devtools.cloudbuild_v1 import CloudBuildClient

            from kinetic_gke.gcp import client_kwargs

            try:
                self._client = CloudBuildClient(**client_kwargs())
            except DefaultCredentialsError as exc:
                raise ConfigError(
                    "No Google Cloud credentials for Cloud Build. Run "
                    "`gcloud auth application-default login`, or use container_image="
                    f"'prebuilt' or an image URI. ({exc})"
                ) from exc
        return self._client

    @property
    def parent(self) -> str:
        return f"projects/{self.project}/locations/{self.location}"

    def image_exists(self, uri: str) -> bool:
        return self.registry.exists(uri)

    def ensure(self, context: BuildContext, uri: str) -> str:
        """``uri``, built first unless the registry already has it."""
        if self.image_exists(uri):
            _log.info("image.cached", image=uri)
            return uri
        return self.build(context, uri)

    def build(self, context: BuildContext, uri: str) -> str:
        """Build and push ``uri`` from ``context`` now; wait for the result."""
        from google.api_core import exceptions as gexc
        from google.api_core.future.polling import DEFAULT_POLLING
        from google.cloud.devtools import cloudbuild_v1

        source = None
        if self._source_uploader is not None:
            name = f"kinetic/contexts/{context.content_hash}.tar.gz"
            source = self._source_uploader(context_tarball(context.files), name)
        # Cloud Build stops the build when we would stop waiting (it rejects very short limits).
        build_timeout = max(60, int(self._timeout))
        account = self.service_account
        body = build_request(
            context,
            uri,
            source=source,
            timeout_seconds=build_timeout,
            service_account=f"projects/{self.project}/serviceAccounts/{account}" if account else "",
            logs_bucket=self.logs_bucket,
        )
        request: dict[str, Any] = {"parent": self.parent, "build": cloudbuild_v1.Build(body)}
        if getattr(self.client.transport, "kind", "") != "rest":
            # gRPC needs project_id; over REST it would select the global (location-less) URL.
            request["project_id"] = self.project
        try:
            operation = self.client.create_build(request=request)
        except gexc.GoogleAPICallError as exc:
            raise self._api_error(exc, f"create a build of {uri}") from exc
        started = operation.metadata.build
        _log.info(
            "image.build.started",
            image=uri,
            build_id=started.id,
            log_url=started.log_url,
            project=self.project,
            location=self.location,
        )
        polling = DEFAULT_POLLING.with_delay(
            initial=self._poll_interval[0], maximum=self._poll_interval[1]
        )
        try:
            operation.result(timeout=self._timeout, polling=polling)
        except concurrent.futures.TimeoutError:
            self._cancel(started.name)
            raise self._failure(uri, started, "TIMEOUT", "gave up waiting") from None
        except gexc.GoogleAPICallError as exc:
            finished = self._get(started.name)
            if finished.status.name in _TERMINAL_FAILURES:
                raise self._failure(uri, finished, finished.status.name, "") from exc
            raise self._api_error(exc, f"wait for build {started.id}") from exc
        _log.info("image.build.finished", image=uri, build_id=started.id)
        return uri

    def _get(self, name: str) -> Any:
        from google.api_core import exceptions as gexc

        try:
            return self.client.get_build(request={"name": name})
        except gexc.GoogleAPICallError as exc:
            raise self._api_error(exc, f"read build {name}") from exc

    def _cancel(self, name: str) -> None:
        from google.api_core import exceptions as gexc

        try:
            self.client.cancel_build(request={"name": name})
        except gexc.GoogleAPICallError as exc:
            _log.warning("image.build.cancel_failed", build=name, error=str(exc))

    def _failure(self, uri: str, build: Any, status: str, why: str) -> ImageBuildError:
        tail = self._log_tail(build.logs_bucket, build.id)
        detail = why or build.status_detail or build.failure_info.detail or ""
        if status == "TIMEOUT":
            advice = (
                f"The build ran longer than {self._timeout:.0f} s and was cancelled. Large "
                "dependencies take time to install: retry, or use container_image='prebuilt'."
            )
        else:
            advice = (
                "Usually a requirement failed to install: fix it in requirements.txt or "
                "pyproject.toml and run again. If the push failed because repository "
                f"'{uri.split('/')[2] if uri.count('/') >= 3 else uri}' is missing, run "
                "`kinetic up` to create it."
            )
        message = (
            f"Image build {build.id} for {uri} ended with status {status}"
            + (f" ({detail})" if detail else "")
            + f".\nLast lines of the build log:\n{tail}\nFull log: {build.log_url}\n{advice}"
        )
        return ImageBuildError(
            message, build_id=build.id, status=status, log_url=build.log_url, log_tail=tail
        )

    def _log_tail(self, logs_bucket: str, build_id: str) -> str:
        try:
            text = self._log_fetcher(logs_bucket, build_id)
        except Exception as exc:  # the log is a courtesy; the failure itself matters more
            return f"  (could not read the build log from {logs_bucket}: {exc})"
        lines = text.rstrip("\n").splitlines()[-self._tail_lines :]
        return "\n".join(f"  {line}" for line in lines)

    def _api_error(self, exc: Exception, action: str) -> ImageBuildError:
        code = getattr(exc, "code", None)
        where = f"project {self.project!r}, location {self.location!r}"
        hints = {
            401: "Run `gcloud auth application-default login`.",
            403: (
                "Your credentials may not create builds there: grant "
                "roles/cloudbuild.builds.editor and enable the API with "
                "`gcloud services enable cloudbuild.googleapis.com`."
                + (
                    f" Builds run as {self.service_account}, so you also need "
                    "roles/iam.serviceAccountUser on that account."
                    if self.service_account
                    else ""
                )
            ),
            404: "Check the project and zone, and that the Cloud Build API is enabled.",
        }
        hint = hints.get(
            code if isinstance(code, int) else -1, "Retry, or check the Cloud Build status."
        )
        text = str(getattr(exc, "message", "") or exc)[:256]
        return ImageBuildError(
            f"Cloud Build refused to {action} in {where}: {code} {text}. {hint}",
            status=str(code or ""),
        )
