"""A connection to one cluster: the user's kubeconfig (only ever read), one API client, retries
of transient answers, and errors translated once (:mod:`kinetic_gke.k8s.errors`).

Every workload (a Job, a LeaderWorkerSet) talks to the cluster through one of these. Reads use
``_preload_content=False`` and decode the JSON once, which is much faster than the client's
model objects for a LIST of thousands of objects.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from kinetic_gke.k8s.errors import NotFound, translate
from kinetic_protocol import ConfigError, KineticError

__all__ = [
    "ClusterConnection",
    "Obj",
    "get_credentials_command",
    "kube_context_name",
    "kubeconfig_path",
]

Obj = dict[str, Any]
_TRANSIENT = frozenset({429, 500, 502, 503, 504})
_RETRY_DELAYS = (0.1, 0.4)
"""Every call made here is safe to repeat (creates are idempotent), so a transient answer is
retried after these pauses before it becomes an error."""
_POOL_SIZE = 32
"""Connections kept open to the API server (see ``from_kubeconfig``)."""


def kube_context_name(project: str, zone: str, cluster: str) -> str:
    """The context ``gcloud container clusters get-credentials`` writes for a GKE cluster."""
    return f"gke_{project}_{zone}_{cluster}"


def get_credentials_command(project: str, zone: str, cluster: str) -> str:
    """The command that writes the kubeconfig context of a cluster, with what is known filled in."""
    return (
        f"gcloud container clusters get-credentials {cluster or 'CLUSTER'} "
        f"--location {zone or 'ZONE'} --project {project or 'PROJECT'}"
    )


def kubeconfig_path() -> Path:
    """The file ``kubectl`` would read first: ``$KUBECONFIG``'s first entry, else ~/.kube/config."""
    first = os.environ.get("KUBECONFIG", "").split(os.pathsep)[0]
    return Path(first).expanduser() if first else Path.home() / ".kube" / "config"


_COMPRESSED = {"Accept-Encoding": "gzip"}


class ClusterConnection:
    """One cluster, one namespace, one API client."""

    def __init__(self, api_client: Any, namespace: str) -> None:
        from kubernetes import client

        self.namespace = namespace
        self.api_client = api_client
        self.context: str | None = None
        """The kubeconfig context it was made from (``from_kubeconfig``), for ``kubectl``."""
        self.kubeconfig: Path | None = None
        """The kubeconfig file named explicitly to ``from_kubeconfig``, if any."""
        self.core = client.CoreV1Api(api_client)
        self.batch = client.BatchV1Api(api_client)
        self.custom = client.CustomObjectsApi(api_client)

    @classmethod
    def from_kubeconfig(
        cls,
        *,
        context: str,
        namespace: str,
        config_file: Path | None = None,
        get_credentials: str | None = None,
    ) -> ClusterConnection:
        """Connect through ``context`` without touching the global config or the file.

        ``get_credentials`` is the command that adds the context, quoted in errors.
        """
        from kubernetes import client, config

        get_credentials = get_credentials or get_credentials_command("", "", "")
        path = config_file or kubeconfig_path()
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
            configuration = client.Configuration()
            # Into this configuration only (not the global one), never written back: what
            # new_client_from_config does, with the pool size settable before the client.
            config.load_kube_config(  # type: ignore[no-untyped-call]  # noqa: TID251
                config_file=str(path),
                context=context,
                client_configuration=configuration,
                persist_config=False,
            )
        except config.ConfigException as exc:
            raise ConfigError(
                f"Context {context!r} of kubeconfig {path} cannot be used: {exc}. Refresh it "
                f"with `{get_credentials}`."
            ) from exc
        # One kept-alive connection per thread that may call at once (a batch submits from up
        # to 16): a smaller pool drops connections and pays a TLS handshake per request.
        configuration.connection_pool_maxsize = _POOL_SIZE
        connection = cls(client.ApiClient(configuration), namespace)
        connection.context, connection.kubeconfig = context, config_file
        return connection

    @classmethod
    def from_endpoint(
        cls,
        *,
        server: str,
        ca_certificate: bytes,
        token: Callable[[], str],
        namespace: str,
    ) -> ClusterConnection:
        """Connect to ``server`` (``https://...``), trusting ``ca_certificate`` (PEM) alone,
        with the bearer token ``token()`` returns (asked before every request, so it may
        refresh it). Everything stays in memory: no kubeconfig is read or written."""
        from kubernetes import client

        configuration = client.Configuration()
        configuration.host = server
        configuration.ca_cert_data = ca_certificate.decode()
        configuration.verify_ssl = True
        configuration.api_key_prefix["authorization"] = "Bearer"
        configuration.api_key["authorization"] = ""  # present, so the hook below is asked

        def refresh(config: Any) -> None:
            config.api_key["authorization"] = token()

        configuration.refresh_api_key_hook = refresh  # type: ignore[assignment]  # typed None
        return cls(client.ApiClient(configuration), namespace)

    # -- calls ---------------------------------------------------------------------------

    def call(self, doing: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Make one API call; retry transient answers, then say what failed in ``doing``."""
        from kubernetes.client.exceptions import ApiException

        retries = iter(_RETRY_DELAYS)
        while True:
            try:
                return fn(*args, **kwargs)
            except ApiException as exc:
                delay = next(retries, None) if exc.status in _TRANSIENT else None
                if delay is None:
                    raise translate(exc, doing) from exc
            except KineticError:  # the credentials' own error (no token), already explained
                raise
            except Exception as exc:
                raise translate(exc, doing) from exc
            time.sleep(delay)

    def send(self, doing: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> None:
        """A call whose answer is not needed (create, patch, delete). The answer is read to
        its end, so the kept-alive connection goes back to the pool: left unread, every such
        call would open (and TLS-handshake) a connection of its own."""
        response = self.call(doing, fn, *args, _preload_content=False, **kwargs)
        response.read()
        response.release_conn()

    def read(self, doing: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Obj:
        """A call whose JSON answer is returned as a plain dict."""
        data: Obj = json.loads(self.read_bytes(doing, fn, *args, **kwargs))
        return data

    def read_bytes(self, doing: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> bytes:
        """A call whose answer is returned undecoded, for a caller that decodes only part.

        The answer may come gzipped (the API server compresses one over 128 KiB when asked):
        a batch's pod listing is about 6 KB a pod, 60 MB for 10,000, which gzip makes about
        17 times smaller for a laptop polling a cluster over the internet. urllib3 inflates
        it."""
        response = self.call(
            doing, fn, *args, _preload_content=False, _headers=_COMPRESSED, **kwargs
        )
        data: bytes = response.data
        return data

    def read_or_none(self, doing: str, fn: Callable[..., Any], *args: Any) -> Obj | None:
        try:
            return self.read(doing, fn, *args)
        except NotFound:
            return None

    # -- what every workload has: pods, events, logs ------------------------------------

    def list_pods(self, selector: str) -> list[Obj]:
        listing = self.read(
            "listing pods", self.core.list_namespaced_pod, self.namespace, label_selector=selector
        )
        return list(listing.get("items") or [])

    def list_nodes(self, selector: str = "") -> list[Obj]:
        """The cluster's nodes matching a label selector (cluster-scoped: needs RBAC for it)."""
        listing = self.read("listing nodes", self.core.list_node, label_selector=selector)
        return list(listing.get("items") or [])

    def list_events(self, field_selector: str) -> list[Obj]:
        listing = self.read(
            "listing events",
            self.core.list_namespaced_event,
            self.namespace,
            field_selector=field_selector,
        )
        return list(listing.get("items") or [])

    def failed_create_events(self, kind: str) -> list[Obj]:
        """Why the cluster refuses to create pods for objects of ``kind`` (admission, quota,
        a missing service account): every such object's ``FailedCreate`` events, one LIST."""
        return self.list_events(f"involvedObject.kind={kind},reason=FailedCreate")

    def pod_log(self, pod: Obj, *, tail: int | None = None, previous: bool = False) -> str:
        """A pod's output so far; empty until a container has started (nothing written yet).

        ``previous``: the output of the container's run before its last restart."""
        if not _started(pod):
            return ""
        name = pod["metadata"]["name"]
        kwargs: dict[str, Any] = {"tail_lines": tail} if tail is not None else {}
        if previous:
            kwargs["previous"] = True
        try:
            response = self.call(
                f"reading the log of pod {name}",
                self.core.read_namespaced_pod_log,
                name,
                self.namespace,
                _preload_content=False,
                **kwargs,
            )
        except NotFound:
            return ""
        text: str = response.data.decode("utf-8", errors="replace")
        return text

    def follow_pod_log(self, name: str) -> Iterator[str]:
        """Yield a pod's output lines as they are written, until its container exits."""
        response = self.call(
            f"following the log of pod {name}",
            self.core.read_namespaced_pod_log,
            name,
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
            with contextlib.suppress(Exception):
                response.release_conn()


def _started(pod: Obj) -> bool:
    """Whether any container has run (only then does the kubelet have a log to serve)."""
    for container in pod.get("status", {}).get("containerStatuses") or []:
        state = container.get("state") or {}
        if "running" in state or "terminated" in state or container.get("lastState"):
            return True
    return False
