"""A finished multi-host job stops its own slice, so an idle slice costs nothing while no
client polls (a user who submits and closes the laptop).

In a LeaderWorkerSet pod a host whose run is over records the outcome and the end of every
host's output on the LeaderWorkerSet, the way a polling client does (the annotations of
``kinetic_protocol.slices``), and scales it to zero in the same patch. It does this from the
container Kubernetes restarts after its run (which otherwise only waits to be stopped): the
leader once the outcome is known, whatever it is; a worker once its own run failed, so a slice
whose leader still runs (or waits on the failed host in a collective) stops too. The outcome
is read as the backend reads it (:mod:`kinetic_runtime.slice_outcome`). The object stays, so
``status()``, ``result()`` and ``logs()`` still read the outcome; cleanup deletes it as before.

It talks to the API server the way any in-cluster client does: ``KUBERNETES_SERVICE_HOST``
and the pod's service-account token and CA, with plain HTTPS (no Kubernetes client in the
runtime). ``kinetic up`` grants the job's service account what it needs (a namespace Role);
without that, or outside a pod, nothing is released here and the next poll does it.
"""

from __future__ import annotations

import json
import os
import ssl
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kinetic_protocol.slices import (
    FINAL_STATE,
    LOG_TAIL_BYTES,
    LOG_TAIL_LINES,
    final_annotations,
    first_run,
    log_tail_key,
    newest_by_host,
)
from kinetic_runtime import settings
from kinetic_runtime.multihost import SliceHost
from kinetic_runtime.slice_outcome import slice_outcome

__all__ = ["SliceApi", "release_slice"]

Obj = dict[str, Any]
SLICE_NAME = "leaderworkerset.sigs.k8s.io/name"
TOKEN_DIR = Path("/var/run/secrets/kubernetes.io/serviceaccount")
_LWS = "/apis/leaderworkerset.x-k8s.io/v1"
_POLL_S = 1.0
_ATTEMPTS = 5


class ApiError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"HTTP {status}: {message}")
        self.status = status


class SliceApi:
    """The calls this pod makes about its own LeaderWorkerSet, with its own identity."""

    def __init__(self, server: str, token: str, ca_file: Path, namespace: str, name: str) -> None:
        self.server = server
        self.token = token
        self.context = ssl.create_default_context(cafile=str(ca_file))
        self.namespace = namespace
        self.name = name

    @classmethod
    def from_pod(cls, environ: dict[str, str] | None = None) -> SliceApi | None:
        """The API as this pod reaches it; None outside a LeaderWorkerSet pod with a token."""
        env = dict(os.environ) if environ is None else environ
        host, port = env.get("KUBERNETES_SERVICE_HOST"), env.get("KUBERNETES_SERVICE_PORT")
        name = settings.SLICE.from_env(env)
        token_file = TOKEN_DIR / "token"
        if not (host and port and name and token_file.is_file()):
            return None
        server_host = f"[{host}]" if ":" in host else host
        return cls(
            f"https://{server_host}:{port}",
            token_file.read_text().strip(),
            TOKEN_DIR / "ca.crt",
            (TOKEN_DIR / "namespace").read_text().strip(),
            name,
        )

    def _request(self, method: str, path: str, body: Obj | None = None) -> bytes:
        data = None if body is None else json.dumps(body).encode()
        headers = {"Authorization": f"Bearer {self.token}", "Accept": "application/json"}
        if body is not None:
            headers["Content-Type"] = "application/merge-patch+json"
        url = self.server + path  # always https://: built in from_pod
        request = urllib.request.Request(url, data, headers, method=method)  # noqa: S310
        try:
            with urllib.request.urlopen(request, context=self.context, timeout=30) as answer:  # noqa: S310
                content: bytes = answer.read()
                return content
        except urllib.error.HTTPError as exc:
            raise ApiError(exc.code, exc.read().decode(errors="replace")[:300]) from None

    def _lws_path(self) -> str:
        return f"{_LWS}/namespaces/{self.namespace}/leaderworkersets/{self.name}"

    def slice(self) -> Obj | None:
        try:
            found: Obj = json.loads(self._request("GET", self._lws_path()))
        except ApiError as exc:
            if exc.status == 404:
                return None
            raise
        return found

    def pods(self) -> list[Obj]:
        query = urllib.parse.urlencode({"labelSelector": f"{SLICE_NAME}={self.name}"})
        listing = json.loads(
            self._request("GET", f"/api/v1/namespaces/{self.namespace}/pods?{query}")
        )
        return list(listing.get("items") or [])

    def log(self, pod: Obj) -> str:
        query = {"tailLines": str(LOG_TAIL_LINES)}
        if _restarted(pod):  # the first run's output; the running container only waits
            query["previous"] = "true"
        path = f"/api/v1/namespaces/{self.namespace}/pods/{pod['metadata']['name']}/log"
        try:
            return self._request("GET", f"{path}?{urllib.parse.urlencode(query)}").decode(
                errors="replace"
            )
        except ApiError:
            return ""

    def stop(self, lws: Obj, annotations: dict[str, str]) -> bool:
        """Record and scale to zero over the version read; False if it changed meanwhile."""
        metadata = {
            "annotations": annotations,
            "resourceVersion": lws["metadata"]["resourceVersion"],
        }
        try:
            self._request(
                "PATCH", self._lws_path(), {"metadata": metadata, "spec": {"replicas": 0}}
            )
        except ApiError as exc:
            if exc.status in (404, 409):
                return False
            raise
        return True


def _restarted(pod: Obj) -> bool:
    return any(
        "terminated" in (c.get("lastState") or {})
        for c in (pod.get("status") or {}).get("containerStatuses") or []
    )


def _stopped(lws: Obj) -> bool:
    if lws["metadata"].get("deletionTimestamp"):
        return True
    return FINAL_STATE in (lws["metadata"].get("annotations") or {})


def release_slice(api: SliceApi, host: SliceHost, say: Callable[[str], None]) -> bool:
    """Stop the slice once the job's outcome is known, recording it; True if this host did.

    Called by a host once its container restarted after its run (so any JAX shutdown barrier
    is behind it). The leader waits for the outcome, a success or a failure; a worker whose
    run succeeded leaves it to the leader, and one whose run failed records the failure at
    once (naming the lowest failed host, as a client would), since the leader may never end.
    Another host or a polling client that recorded an outcome first wins: the record goes over
    the version read.
    """
    while True:
        lws = api.slice()
        if lws is None or _stopped(lws):
            return False
        pods = newest_by_host(api.pods())
        own = first_run(pods.get(host.index))
        if own is not None and own.get("exitCode") == 0 and not host.is_leader:
            return False
        outcome = None if own is None else slice_outcome(host.count, lws, pods)
        if outcome is not None:
            break
        time.sleep(_POLL_S)  # the pods' statuses change without a word to this process
    annotations = final_annotations(outcome)
    for index in range(host.count):
        pod = pods.get(index)
        text = "" if pod is None else api.log(pod)
        annotations[log_tail_key(index)] = text[-LOG_TAIL_BYTES:]
    for _ in range(_ATTEMPTS):
        if api.stop(lws, annotations):
            said = outcome.status.value.lower() + (f" ({outcome.detail})" if outcome.detail else "")
            say(f"stopped slice {api.name}: {said}")
            return True
        lws = api.slice()
        if lws is None or _stopped(lws):
            return False
    return False
