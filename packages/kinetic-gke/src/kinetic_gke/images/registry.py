"""Ask a container registry whether an image tag exists (Docker Registry HTTP API v2).

Artifact Registry speaks this API at ``https://{region}-docker.pkg.dev/v2/...``. The endpoint
and the token source are injectable, so tests point the check at a local fake and production
uses Application Default Credentials. Uses only the standard library's HTTP client.
"""

import re
import urllib.error
import urllib.request
from collections.abc import Callable

import msgspec

from kinetic_protocol.errors import BackendError, ConfigError

__all__ = ["ImageReference", "RegistryClient", "google_access_token", "parse_image_reference"]

_MANIFEST_TYPES = ", ".join(
    [
        "application/vnd.oci.image.index.v1+json",
        "application/vnd.oci.image.manifest.v1+json",
        "application/vnd.docker.distribution.manifest.list.v2+json",
        "application/vnd.docker.distribution.manifest.v2+json",
    ]
)
_HOST_RE = re.compile(r"^(?:localhost|[a-zA-Z0-9-]+(?:\.[a-zA-Z0-9-]+)+)(?::\d+)?$|^localhost:\d+$")
_PATH_RE = re.compile(
    r"^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*$"
)
_TAG_RE = re.compile(r"^\w[\w.-]{0,127}$")
_DIGEST_RE = re.compile(r"^[a-z0-9]+(?:[+._-][a-z0-9]+)*:[a-zA-Z0-9=_-]{32,}$")


class ImageReference(msgspec.Struct, frozen=True, kw_only=True):
    """A parsed image reference: ``host/path:tag`` or ``host/path@digest``."""

    host: str
    """Registry host; ``docker.io`` when the reference names none."""
    path: str
    tag: str = ""
    digest: str = ""


def parse_image_reference(uri: str) -> ImageReference:
    """Parse ``uri``; a :class:`ConfigError` says what is wrong with it."""
    text = uri if isinstance(uri, str) else ""
    name, _, digest = text.partition("@")
    tag = ""
    has_tag = name.rfind(":") > name.rfind("/")
    if has_tag:
        name, _, tag = name.rpartition(":")
    first, _, rest = name.partition("/")
    is_host = bool(rest) and ("." in first or ":" in first or first == "localhost")
    host, path = (first, rest) if is_host else ("docker.io", name)
    valid = (
        bool(_PATH_RE.match(path))
        and (not is_host or bool(_HOST_RE.match(host)))
        and (not has_tag or bool(_TAG_RE.match(tag)))
        and (not digest or bool(_DIGEST_RE.match(digest)))
        and ("@" not in text or bool(digest))
    )
    if not valid:
        raise ConfigError(
            f"container_image={uri!r} is not a container image reference. Use 'bundled', "
            "'prebuilt', or an image URI such as "
            "'us-docker.pkg.dev/my-project/my-repo/image:tag' (lowercase path, no spaces)."
        )
    return ImageReference(host=host, path=path, tag=tag, digest=digest)


def google_access_token() -> str | None:
    """An OAuth token from Application Default Credentials (imported lazily)."""
    import google.auth
    import google.auth.transport.requests
    from google.auth.exceptions import DefaultCredentialsError

    try:
        credentials, _ = google.auth.default(
            scopes=["https://www.googleapis.com/auth/cloud-platform"]
        )
    except DefaultCredentialsError as exc:
        raise ConfigError(
            "No Google Cloud credentials to reach Artifact Registry. Run "
            "`gcloud auth application-default login` (or set GOOGLE_APPLICATION_CREDENTIALS)."
        ) from exc
    credentials.refresh(google.auth.transport.requests.Request())  # type: ignore[no-untyped-call]
    token = credentials.token
    return str(token) if token else None


class RegistryClient:
    """Checks tags through ``GET /v2/{path}/manifests/{tag}``.

    ``endpoint`` replaces ``https://{host}`` for every image (a test server); ``token``
    returns a bearer token or ``None`` for anonymous access.
    """

    def __init__(
        self,
        *,
        endpoint: str | None = None,
        token: Callable[[], str | None] = google_access_token,
        timeout: float = 30.0,
    ) -> None:
        self._endpoint = endpoint.rstrip("/") if endpoint else None
        self._token = token
        self._timeout = timeout

    @classmethod
    def from_settings(cls) -> "RegistryClient":
        """Google's registries with Application Default Credentials, or the endpoint of
        ``KINETIC_GCP_API_ENDPOINT`` (anonymous when it is ``http://``: an emulator)."""
        from kinetic_gke import settings

        endpoint = settings.GCP_API_ENDPOINT.from_env()
        if endpoint and endpoint.startswith("http://"):
            return cls(endpoint=endpoint, token=lambda: None)
        return cls(endpoint=endpoint or None)

    def manifest_url(self, image: ImageReference) -> str:
        base = self._endpoint or f"https://{image.host}"
        return f"{base}/v2/{image.path}/manifests/{image.digest or image.tag or 'latest'}"

    def exists(self, uri: str) -> bool:
        """True when the registry holds ``uri``; False on 404; errors otherwise."""
        image = parse_image_reference(uri)
        url = self.manifest_url(image)
        if not url.startswith(("https://", "http://")):
            raise ConfigError(f"Registry endpoint must be an http(s) URL, got {url!r}.")
        request = urllib.request.Request(url, method="GET")  # noqa: S310 (scheme checked above)
        request.add_header("Accept", _MANIFEST_TYPES)
        token = self._token()
        if token:
            request.add_header("Authorization", f"Bearer {token}")
        try:
            with urllib.request.urlopen(request, timeout=self._timeout) as response:  # noqa: S310
                return 200 <= int(response.status) < 300
        except urllib.error.HTTPError as exc:
            if exc.code == 404:
                return False
            body = exc.read(256).decode("utf-8", "replace")
            hint = (
                " Check that your credentials can read Artifact Registry "
                "(roles/artifactregistry.reader) and that the repository exists "
                "(gcloud artifacts repositories create kinetic --repository-format=docker)."
                if exc.code in (401, 403)
                else ""
            )
            raise BackendError(
                f"Registry check for {uri} failed: HTTP {exc.code} from {url}: {body}.{hint}"
            ) from exc
        except urllib.error.URLError as exc:
            raise BackendError(
                f"Cannot reach the registry at {url} to check {uri}: {exc.reason}. "
                "Check your network connection."
            ) from exc
