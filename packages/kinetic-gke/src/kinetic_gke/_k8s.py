"""All contact with the ``kubernetes`` package: building a client from the user's kubeconfig
(read, never modified) and the few API calls the backend makes, returning plain dicts.

Reads use ``_preload_content=False`` and decode the JSON once, which is much faster than the
client's model objects for a LIST of thousands of Jobs.
"""

import contextlib
import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from kinetic_protocol import BackendError, ConfigError

__all__ = [
    "AlreadyExists",
    "BadRequest",
    "KubeApi",
    "NotFound",
    "get_credentials_command",
    "kube_context_name",
]

Obj = dict[str, Any]
_BODY_LIMIT = 300
_TRANSIENT = frozenset({429, 500, 502, 503, 504})
_NOT_STARTED = ("is waiting to start", "ContainerCreating", "PodInitializing")
_RETRY_DELAYS = (0.1, 0.4)
"""Every call here is safe to repeat (creates are idempotent), so a transient answer is retried
after these pauses before it becomes an error."""


class NotFound(BackendError):
    """The object does not exist (HTTP 404)."""


class AlreadyExists(BackendError):
    """An object of that name exists already (HTTP 409)."""


class BadRequest(BackendError):
    """The API refused the request as it stands (HTTP 400), e.g. the log of a pod not started."""


def kube_context_name(project: str, zone: str, cluster: str) -> str:
    """The context ``gcloud container clusters get-credentials`` writes for a GKE cluster."""
    return f"gke_{project}_{zone}_{cluster}"


def get_credentials_command(project: str, zone: str, cluster: str) -> str:
    """The command that writes the kubeconfig context of a cluster, with what is known filled in."""
    return (
        f"gcloud container clusters get-credentials {cluster or 'CLUSTER'} "
        f"--location {zone or 'ZONE'} --project {project or 'PROJECT'}"
    )


def _kubeconfig_path() -> Path:
    first = os.environ.get("KUBECONFIG", "").split(os.pathsep)[0]
    return Path(first).expanduser() if first else Path.home() / ".kube" / "config"


def _translate(exc: Exception, doing: str) -> BackendError:
    from kubernetes.client.exceptions import ApiException

    if isinstance(exc, ApiException):
        raw: object = exc.body or ""  # typed str, but bytes when the body was not preloaded
        body = raw.decode() if isinstance(raw, bytes) else str(raw)
        try:
            message = json.loads(body).get("message", body)
        except ValueError:
            message = body
        message = message[:_BODY_LIMIT]
        if exc.status == 404:
            return NotFound(f"{doing}: not found ({message})")
        if exc.status == 409:
            return AlreadyExists(f"{doing}: already exists ({message})")
        if exc.status == 400:
            return BadRequest(f"{doing}: refused ({message})")
        if exc.status in (401, 403):
            return BackendError(
                f"{doing}: permission denied ({message}). Check that your credentials can reach "
                "the cluster: run `gcloud auth login`, make sure gke-gcloud-auth-plugin is "
                "installed (`gcloud components install gke-gcloud-auth-plugin`), and that you "
                "have the IAM role roles/container.developer."
            )
        return BackendError(f"{doing}: Kubernetes API error {exc.status} ({message})")
    return BackendError(f"{doing}: cannot reach the Kubernetes API ({exc})")


class KubeApi:
    """A namespaced view of one cluster through the official client."""

    def __init__(self, api_client: Any, namespace: str) -> None:
        from kubernetes import client

        self.namespace = namespace
        self._batch = client.BatchV1Api(api_client)
        self._core = client.CoreV1Api(api_client)

    @classmethod
    def from_kubeconfig(
        cls,
        *,
        context: str,
        namespace: str,
        config_file: Path | None = None,
        get_credentials: str | None = None,
    ) -> "KubeApi":
        """Build a client for ``context`` without touching the global config or the file.

        ``get_credentials`` is the command that adds the context, quoted in errors.
        """
        from kubernetes import config

        get_credentials = get_credentials or get_credentials_command("", "", "")
        path = config_file or _kubeconfig_path()
        if not path.exists():
            raise ConfigError(
                f"No kubeconfig at {path}. Fetch the cluster's credentials first: "
                f"`{get_credentials}`."
            )
        try:
            contexts, _active = config.list_kube_config_contexts(  # type: ignore[no-untyped-call]
                config_file=str(path)
            )
        except Exception as exc:  # ConfigException, or YAML/OS errors of a broken file
            raise ConfigError(
                f"Kubeconfig {path} cannot be read: {exc}. Fix or move it, then fetch the "
                f"cluster's credentials again: `{get_credentials}`."
            ) from exc
        names = [c["name"] for c in contexts]
        if context not in names:
            raise ConfigError(
                f"Kubeconfig {path} has no context {context!r} "
                f"(it has: {', '.join(names) or 'none'}). Fetch it with `{get_credentials}`, "
                "or set KINETIC_KUBE_CONTEXT to the context to use."
            )
        try:
            api_client = config.new_client_from_config(  # type: ignore[no-untyped-call]
                config_file=str(path), context=context, persist_config=False
            )
        except config.ConfigException as exc:
            raise ConfigError(
                f"Context {context!r} of kubeconfig {path} cannot be used: {exc}. Refresh it "
                f"with `{get_credentials}`."
            ) from exc
        return cls(api_client, namespace)

    def _call(self, doing: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
        """Make one API call; retry transient answers, then say what failed in ``doing``."""
        from kubernetes.client.exceptions import ApiException

        retries = iter(_RETRY_DELAYS)
        while True:
            try:
                return fn(*args, **kwargs)
            except ApiException as exc:
                delay = next(retries, None) if exc.status in _TRANSIENT else None
                if delay is None:
                    raise _translate(exc, doing) from exc
            except Exception as exc:
                raise _translate(exc, doing) from exc
            time.sleep(delay)

    def _read(self, doing: str, fn: Any, *args: Any, **kwargs: Any) -> Obj:
        response = self._call(doing, fn, *args, _preload_content=False, **kwargs)
        data: Obj = json.loads(response.data)
        return data

    def create_job(self, body: Obj) -> bool:
        """Create the Job; False if one with that name already exists (idempotent submit)."""
        try:
            self._call(
                f"creating Job {body['metadata']['name']} in namespace {self.namespace}",
                self._batch.create_namespaced_job,
                self.namespace,
                body,  # the client takes a plain dict as well as its V1Job model
                _preload_content=False,
            )
        except AlreadyExists:
            return False
        return True

    def get_job(self, name: str) -> Obj | None:
        try:
            return self._read(
                f"reading Job {name}", self._batch.read_namespaced_job, name, self.namespace
            )
        except NotFound:
            return None

    def list_jobs(self, selector: str) -> list[Obj]:
        listing = self._read(
            "listing Jobs", self._batch.list_namespaced_job, self.namespace, label_selector=selector
        )
        return list(listing.get("items") or [])

    def list_pods(self, selector: str) -> list[Obj]:
        listing = self._read(
            "listing pods", self._core.list_namespaced_pod, self.namespace, label_selector=selector
        )
        return list(listing.get("items") or [])

    def delete_job(self, name: str) -> None:
        with contextlib.suppress(NotFound):  # already gone: deleting is idempotent
            self._call(
                f"deleting Job {name}",
                self._batch.delete_namespaced_job,
                name,
                self.namespace,
                propagation_policy="Foreground",
                _preload_content=False,
            )

    def pod_log(self, pod: str, *, tail: int | None = None) -> str:
        kwargs: dict[str, Any] = {"tail_lines": tail} if tail is not None else {}
        try:
            response = self._call(
                f"reading the log of pod {pod}",
                self._core.read_namespaced_pod_log,
                pod,
                self.namespace,
                _preload_content=False,
                **kwargs,
            )
        except NotFound:
            return ""
        except BadRequest as exc:
            if any(state in str(exc) for state in _NOT_STARTED):
                return ""  # the container has not started, so it has written nothing yet
            raise
        text: str = response.data.decode("utf-8", errors="replace")
        return text

    def follow_pod_log(self, pod: str) -> Iterator[str]:
        response = self._call(
            f"following the log of pod {pod}",
            self._core.read_namespaced_pod_log,
            pod,
            self.namespace,
            follow=True,
            _preload_content=False,
        )
        try:
            pending = b""
            for chunk in response.stream(4096, decode_content=True):
                pending += chunk
                *lines, pending = pending.split(b"\n")
                for line in lines:
                    yield line.decode("utf-8", errors="replace") + "\n"
            if pending:
                yield pending.decode("utf-8", errors="replace")
        finally:
            response.release_conn()
