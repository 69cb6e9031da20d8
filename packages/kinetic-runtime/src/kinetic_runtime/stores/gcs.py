"""An object store in a Google Cloud Storage bucket, for jobs that run on GKE.

``google.cloud.storage`` is imported on first use, never at import time, so a runtime image
that only uses ``file://`` stores does not need it installed (it is the ``kinetic-runtime[gcs]``
extra). Client errors are translated here, at the seam, into Kinetic's storage errors.

Create-only writes use the ``ifGenerationMatch=0`` precondition. Objects up to 8 MiB go up in
one multipart request, where every GCS implementation (fake-gcs-server included) honours the
precondition; larger ones use a resumable upload, which real GCS also checks.

A bucket has no links, so nothing here can lead outside the store: a key is only ever a name
under the store's prefix, and keys that could climb out of it (``..``) are refused.
"""

import os
import re
import threading
from collections.abc import Callable, Iterator
from types import ModuleType
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

from kinetic_protocol.errors import (
    ConfigError,
    ObjectNotFoundError,
    PreconditionFailedError,
    StorageError,
    StoreError,
)
from kinetic_runtime.stores._keys import check_key, check_prefix

if TYPE_CHECKING:
    from google.cloud.storage import Bucket, Client

__all__ = [
    "EMULATOR_ENV",
    "EMULATOR_PROJECT",
    "GCSStore",
    "api_errors",
    "load_library",
    "make_client",
    "short",
]

EMULATOR_ENV = "STORAGE_EMULATOR_HOST"
"""When set (e.g. ``http://127.0.0.1:4443``), clients talk to that emulator, anonymously."""

EMULATOR_PROJECT = "kinetic-emulator"

# Bucket naming rules, simplified: 3-222 characters of lowercase letters, digits, '-', '_' and
# '.', starting and ending with a letter or digit. GCS itself has the final word.
_BUCKET_NAME = re.compile(r"^[a-z0-9][a-z0-9._-]{1,220}[a-z0-9]$")
_DELETE_WORKERS = 8
_DELETE_BATCH = 256
_CONTENT_TYPE = "application/octet-stream"

_T = TypeVar("_T")


class GCSStore:
    """A :class:`~kinetic_protocol.store.ObjectStore` over ``gs://bucket/prefix``.

    ``client`` is a ``google.cloud.storage.Client``; by default one is made on first use, from
    application default credentials, or anonymously against ``$STORAGE_EMULATOR_HOST`` when
    that is set.
    """

    def __init__(
        self,
        bucket: str,
        prefix: str = "",
        client: "Client | None" = None,
        *,
        project: str | None = None,
    ) -> None:
        if not _BUCKET_NAME.match(bucket):
            raise ConfigError(
                f"Invalid GCS bucket name {bucket!r}: use 3+ lowercase letters, digits, '-', "
                "'_' or '.', starting and ending with a letter or digit (e.g. gs://my-bucket)."
            )
        prefix = prefix.strip("/")
        if prefix:
            check_key(prefix)
        self._bucket_name = bucket
        self._prefix = f"{prefix}/" if prefix else ""
        self._project = project
        self._client = client
        self._bucket: Bucket | None = None
        self._lock = threading.Lock()
        # Set once the bucket is known to exist, so a missing object costs one request.
        self._bucket_seen = False

    @property
    def bucket_name(self) -> str:
        return self._bucket_name

    @property
    def prefix(self) -> str:
        """The key prefix inside the bucket, ``""`` or ending with ``/``."""
        return self._prefix

    @property
    def uri(self) -> str:
        return f"gs://{self._bucket_name}/{self._prefix}".removesuffix("/")

    def __repr__(self) -> str:
        return f"GCSStore({self._bucket_name!r}, {self._prefix.removesuffix('/')!r})"

    def read(self, key: str) -> bytes:
        blob = self._get_bucket().blob(self._name(key))
        try:
            data: bytes = blob.download_as_bytes()
        except Exception as exc:
            if isinstance(exc, api_errors().NotFound):
                self._raise_if_bucket_missing(exc, f"reading {key!r}")
                raise ObjectNotFoundError(f"No object {key!r} in store {self.uri}") from exc
            self._raise_storage_error(exc, "read", key)
        self._bucket_seen = True
        return data

    def write(self, key: str, data: bytes, *, if_absent: bool = False) -> None:
        blob = self._get_bucket().blob(self._name(key))
        try:
            if if_absent:
                blob.upload_from_string(data, content_type=_CONTENT_TYPE, if_generation_match=0)
            else:
                blob.upload_from_string(data, content_type=_CONTENT_TYPE)
        except Exception as exc:
            errors = api_errors()
            if isinstance(exc, errors.PreconditionFailed):
                raise PreconditionFailedError(
                    f"Object {key!r} already exists in store {self.uri}; it is written only once."
                ) from exc
            if isinstance(exc, errors.NotFound):  # an upload 404s only for a missing bucket
                self._raise_bucket_missing(exc, f"writing {key!r}")
            self._raise_storage_error(exc, "write", key)
        self._bucket_seen = True

    def exists(self, key: str) -> bool:
        blob = self._get_bucket().blob(self._name(key))
        return self._call(lambda: bool(blob.exists()), "check", key)

    def list(self, prefix: str) -> list[str]:
        check_prefix(prefix)
        return sorted(name.removeprefix(self._prefix) for name in self._list_names(prefix))

    def delete(self, key: str) -> None:
        blob = self._get_bucket().blob(self._name(key))
        try:
            blob.delete()
        except Exception as exc:
            if isinstance(exc, api_errors().NotFound):
                return
            self._raise_storage_error(exc, "delete", key)

    def delete_prefix(self, prefix: str) -> int:
        check_prefix(prefix)
        bucket = self._get_bucket()

        def delete_one(name: str) -> int:
            try:
                bucket.blob(name).delete()
            except Exception as exc:
                if isinstance(exc, api_errors().NotFound):
                    return 0  # deleted concurrently by someone else
                self._raise_storage_error(exc, "delete", name.removeprefix(self._prefix))
            return 1

        removed = 0
        # Listing and deleting overlap: each batch of names is deleted by a small pool while
        # the next page is fetched. (fake-gcs-server has no batch endpoint, so no batch API.)
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(max_workers=_DELETE_WORKERS) as pool:
            for batch in _chunks(self._list_names(prefix), _DELETE_BATCH):
                removed += sum(pool.map(delete_one, batch))
        return removed

    def url(self, key: str) -> str:
        return f"gs://{self._bucket_name}/{self._name(key)}"

    def _name(self, key: str) -> str:
        return self._prefix + check_key(key)

    def _list_names(self, prefix: str) -> Iterator[str]:
        client = self._get_client()
        try:
            for blob in client.list_blobs(self._bucket_name, prefix=self._prefix + prefix):
                yield blob.name
        except Exception as exc:
            if isinstance(exc, api_errors().NotFound):  # a listing 404s only for the bucket
                self._raise_bucket_missing(exc, f"listing {prefix!r}")
            self._raise_storage_error(exc, "list", prefix)
        self._bucket_seen = True

    def client(self) -> "Client":
        """The store's GCS client (made on first use), for bulk transfers beside the store."""
        return self._get_client()

    def _get_client(self) -> "Client":
        with self._lock:
            if self._client is None:
                self._client = make_client(self._project)
            return self._client

    def _get_bucket(self) -> "Bucket":
        client = self._get_client()
        with self._lock:
            if self._bucket is None:
                self._bucket = client.bucket(self._bucket_name)
            return self._bucket

    def _call(self, operation: Callable[[], _T], verb: str, key: str) -> _T:
        try:
            return operation()
        except Exception as exc:
            self._raise_storage_error(exc, verb, key)

    def _raise_if_bucket_missing(self, exc: Exception, doing: str) -> None:
        """After a 404 on read, tell a missing object from a missing bucket (checked once)."""
        if self._bucket_seen:
            return
        try:
            exists = bool(self._get_bucket().exists())
        except Exception:
            exists = True  # e.g. no storage.buckets.get permission: assume the bucket is fine
        if not exists:
            self._raise_bucket_missing(exc, doing)
        self._bucket_seen = True

    def _raise_bucket_missing(self, exc: Exception, doing: str) -> NoReturn:
        raise StorageError(
            f"GCS bucket {self._bucket_name!r} does not exist (while {doing} in {self.uri}). "
            f"Create it first: gcloud storage buckets create gs://{self._bucket_name}"
        ) from exc

    def _raise_storage_error(self, exc: Exception, verb: str, key: str) -> NoReturn:
        errors = api_errors()
        if isinstance(exc, errors.Forbidden | errors.Unauthorized):
            raise StoreError(
                f"Permission denied to {verb} {key!r} in {self.uri}: {short(exc)}. Check that "
                "your credentials (gcloud auth application-default login, or the pod's service "
                f"account) may use bucket {self._bucket_name!r}.",
                key=key,
                cause=exc,
            ) from exc
        if isinstance(exc, errors.GoogleAPIError | OSError) or _is_auth_error(exc):
            raise StoreError(
                f"Could not {verb} {key!r} in {self.uri}: {short(exc)}", key=key, cause=exc
            ) from exc
        raise exc


def load_library() -> None:
    """Import the client library without making a client: about 0.2 s of CPU, done by the
    runtime before it forks (a client must not cross a fork, its loaded modules can), so that
    the job's process and its output's keeper share one import instead of making one each."""
    try:
        import google.auth.transport.requests  # the session's
        import google.cloud.storage  # noqa: F401
    except ImportError:
        return  # make_client says what to install, when the store is first used


def make_client(project: str | None = None) -> "Client":
    """Build a storage client: anonymous against an emulator, else application default."""
    try:
        from google.cloud import storage
    except ImportError as exc:
        raise ConfigError(
            "gs:// stores need google-cloud-storage; install it with: "
            'pip install "kinetic-runtime[gcs]"'
        ) from exc
    emulator = os.environ.get(EMULATOR_ENV)
    if emulator:
        from google.auth.credentials import AnonymousCredentials

        anonymous = AnonymousCredentials()  # type: ignore[no-untyped-call]  # google-auth
        return storage.Client(
            project=project or EMULATOR_PROJECT,
            credentials=anonymous,
            _http=_session(anonymous, emulator),
        )
    try:
        import google.auth

        credentials, found_project = google.auth.default(scopes=storage.Client.SCOPE)
        return storage.Client(
            project=project or found_project,
            credentials=credentials,
            _http=_session(credentials, _ENDPOINT),
        )
    except Exception as exc:
        if _is_auth_error(exc):
            raise StorageError(
                f"No Google Cloud credentials for GCS: {short(exc)}. Run "
                "'gcloud auth application-default login', or give the pod a service account."
            ) from exc
        raise


_ENDPOINT = "https://storage.googleapis.com"
_POOL_SIZE = 32


def _session(credentials: Any, endpoint: str) -> Any:
    """An authorized HTTP session that reads proxy and CA settings from the environment once,
    and keeps a connection open for each of a batch's parallel writers.

    ``requests`` rereads those settings for every request (scanning the whole environment
    twice), which was about half of a small write's CPU; the store only ever talks to one
    endpoint, so its proxies are decided once, here.
    """
    import urllib.parse
    import urllib.request

    from google.auth.transport.requests import AuthorizedSession
    from requests.adapters import HTTPAdapter

    session = AuthorizedSession(credentials)  # type: ignore[no-untyped-call]  # google-auth
    for scheme in ("https://", "http://"):  # a kept-alive connection for each parallel writer
        session.mount(scheme, HTTPAdapter(pool_connections=1, pool_maxsize=_POOL_SIZE))
    session.trust_env = False
    host = urllib.parse.urlsplit(endpoint).hostname or ""
    session.proxies = {} if urllib.request.proxy_bypass(host) else urllib.request.getproxies()
    session.verify = (
        os.environ.get("REQUESTS_CA_BUNDLE") or os.environ.get("CURL_CA_BUNDLE") or True
    )
    return session


def _is_auth_error(exc: BaseException) -> bool:
    from google.auth.exceptions import GoogleAuthError

    return isinstance(exc, GoogleAuthError)


def api_errors() -> ModuleType:
    """``google.api_core.exceptions``; only needed once the client has raised, so already loaded."""
    from google.api_core import exceptions

    return exceptions


def short(exc: BaseException, limit: int = 256) -> str:
    text = str(exc).replace("\n", " ")
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _chunks(items: Iterator[str], size: int) -> Iterator[list[str]]:
    batch: list[str] = []
    for item in items:
        batch.append(item)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch
