"""Start and stop a real control plane: etcd, kube-apiserver, kube-controller-manager, LWS,
Kueue and JobSet.

There is no kubelet and no scheduler: `kinetic_testing.nodeagent` plays both. Everything
listens on 127.0.0.1 only, on free ports, with a throwaway PKI and etcd data directory under
the run directory. Every process is started with a parent-death signal, so a killed test run
never leaves a control plane behind.
"""

from __future__ import annotations

import base64
import ctypes
import json
import os
import secrets
import signal
import ssl
import subprocess
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import TracebackType
from typing import Any, Self

import urllib3

from kinetic_testing.ports import claim_ports, release_ports

from .build import Built
from .jobset_build import JOBSET_CRD
from .jobset_start import start_jobset
from .kueue_start import front_proxy_flags, kueue_crds, start_kueue
from .pki import ADMIN_USER, Pki, make_pki
from .registration import install_crds, start_manager

__all__ = ["CONTEXT", "ApiError", "ControlPlane", "ControlPlaneError"]

CONTEXT = "kinetic-test"
_READY_TIMEOUT_S = 90.0
_STOP_GRACE_S = 2.0
_LOG_TAIL_LINES = 40
_PR_SET_PDEATHSIG = 1
GO_GC_PERCENT = "400"
"""``GOGC`` for the control plane's processes (Go's default is 100). Their garbage collector
took about a sixth of the API server's CPU; at 400 a scenario subset spent 9 to 15% less CPU
in the API server, for a peak of about 830 MB instead of 450. A ``GOGC`` already in the
environment wins."""
_LWS = ("leaderworkerset.x-k8s.io", "leaderworkersets", ["CREATE", "UPDATE"])
_LWS_PATH = "leaderworkerset-x-k8s-io-v1-leaderworkerset"
_LWS_WEBHOOKS = (
    # (kind, name, path, group/resources/operations, only LWS-owned pods)
    ("mutating", "mleaderworkerset.kb.io", f"/mutate-{_LWS_PATH}", _LWS, False),
    ("mutating", "mpod.kb.io", "/mutate--v1-pod", ("", "pods", ["CREATE"]), True),
    ("validating", "vleaderworkerset.kb.io", f"/validate-{_LWS_PATH}", _LWS, False),
    ("validating", "vpod.kb.io", "/validate--v1-pod", ("", "pods", ["CREATE", "UPDATE"]), True),
)


class ControlPlaneError(RuntimeError):
    """A component did not start; the message carries the tail of its log."""


class ApiError(Exception):
    """The API server refused a raw call (:meth:`ControlPlane.request`): ``code`` is the HTTP
    status, ``body`` the answer (a ``Status`` object, as JSON text)."""

    def __init__(self, method: str, path: str, code: int, body: str) -> None:
        super().__init__(f"{method} {path}: HTTP {code}: {body[:500]}")
        self.code = code
        self.body = body


class ControlPlane:
    """A running control plane for one test session. Use as a context manager.

    ``lws=False`` leaves LeaderWorkerSet out (no CRD, no controller), as on a new GKE cluster;
    ``kueue=False`` leaves Kueue out, as on a cluster where nobody installed it; ``jobset=False``
    leaves JobSet out.
    """

    def __init__(
        self,
        binaries: Built,
        run_dir: Path,
        *,
        lws: bool = True,
        kueue: bool = True,
        jobset: bool = True,
    ) -> None:
        self.binaries = binaries
        self.run_dir = run_dir
        self.lws = lws
        self.kueue = kueue
        self.jobset = jobset
        self.kubeconfig = run_dir / "admin.kubeconfig"
        self.context = CONTEXT
        self.logs: dict[str, Path] = {}
        self.startup_seconds: dict[str, float] = {}
        self._processes: dict[str, subprocess.Popen[bytes]] = {}
        self._pki: Pki | None = None
        self._ssl_context: ssl.SSLContext | None = None
        self._token = secrets.token_hex(24)
        """The admin user's bearer token (the kubeconfig's): a map lookup for the API server,
        where a client certificate costs an ECDSA chain check on every request, about a
        twelfth of its CPU in the scenario suites. GKE's users present tokens too."""
        self._connections: urllib3.PoolManager | None = None
        self.api_port = 0
        self._ports: list[int] = []

    # -- public -------------------------------------------------------------------------

    @property
    def server(self) -> str:
        return f"https://127.0.0.1:{self.api_port}"

    @property
    def pki(self) -> Pki:
        if self._pki is None:
            raise RuntimeError("the control plane has not been started")
        return self._pki

    @property
    def process_ids(self) -> dict[str, int]:
        """The running components' process ids, by name."""
        return {name: process.pid for name, process in self._processes.items()}

    def api_client(self) -> Any:
        """A new `kubernetes.client.ApiClient` for the admin user (kubeconfig only read)."""
        from kubernetes import config

        return config.new_client_from_config(  # type: ignore[no-untyped-call]
            config_file=str(self.kubeconfig), context=self.context, persist_config=False
        )

    def create_namespace(self, prefix: str = "t") -> str:
        """A new namespace whose `default` ServiceAccount exists, so pods can be admitted."""
        name = f"{_dns_label(prefix)[:40]}-{uuid.uuid4().hex[:6]}"
        self.request("POST", "/api/v1/namespaces", {"metadata": {"name": name}})
        self.wait_until_served(f"/api/v1/namespaces/{name}/serviceaccounts/default")
        return name

    def delete_namespace(self, name: str) -> None:
        """Remove the namespace's pods at once and ask the namespace controller for the rest;
        does not wait for the rest (it takes about 5 s).

        Without the first step a test's pods outlive it: they wait for a kubelet to confirm
        their end, and the next test's node agent, registering the same nodes, starts the
        ones that restart (a slice's hosts) again. They then hold the nodes' chips, and a
        slice of the next test can wait for a node until it times out.
        """
        for path in (f"/api/v1/namespaces/{name}", f"/api/v1/namespaces/{name}/pods"):
            try:
                # The namespace first: once it is terminating, no controller can create a pod
                # in it, so deleting its pods with no grace period leaves none.
                self.request("DELETE", path + "?gracePeriodSeconds=0")
            except ApiError as error:
                if error.code != 404:
                    raise

    def bearer_token(self, name: str = "kinetic-admin") -> str:
        """A bearer token the API server accepts, as a GKE user's access token is: one of the
        TokenRequest API, for service account ``kube-system/<name>`` bound to cluster-admin."""
        rbac = "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings"
        subject = {"kind": "ServiceAccount", "name": name, "namespace": "kube-system"}
        binding = {
            "metadata": {"name": name},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                        "name": "cluster-admin"},
            "subjects": [subject],
        }  # fmt: skip
        accounts = "/api/v1/namespaces/kube-system/serviceaccounts"
        for path, body in ((accounts, {"metadata": {"name": name}}), (rbac, binding)):
            try:
                self.request("POST", path, body)
            except ApiError as error:
                if error.code != 409:
                    raise
        request = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                   "spec": {"expirationSeconds": 3600}}  # fmt: skip
        issued = self.request("POST", f"{accounts}/{name}/token", request)
        return str(issued["status"]["token"])

    def post_or_get(self, path: str, body: Any, *, content_type: str = "") -> Any:
        """Create an object; one that exists already is read back instead."""
        try:
            return self.request("POST", path, body, content_type=content_type)
        except ApiError as error:
            if error.code != 409:
                raise
        if isinstance(body, bytes):
            import yaml  # type: ignore[import-untyped]  # a dependency of the kubernetes client

            body = yaml.safe_load(body)
        return self.request("GET", f"{path}/{body['metadata']['name']}")

    def wait_until_served(self, path: str, timeout: float = 30.0) -> None:
        """Until ``path`` answers a GET (a new CRD's resource list, say)."""
        self.wait(f"{path} to be served", lambda: self._exists(path), timeout=timeout)

    def log_tails(self, lines: int = _LOG_TAIL_LINES) -> str:
        """The last lines of every component's log, for a failing test's report."""
        parts = []
        for name, path in self.logs.items():
            text = path.read_text(errors="replace").splitlines()[-lines:] if path.exists() else []
            parts.append(f"--- {name} ({path}) ---\n" + "\n".join(text))
        return "\n".join(parts)

    def get_text(self, path: str) -> str:
        """A raw GET as the admin user whose answer is text (a pod's log)."""
        return self._send("GET", path, None, {}).decode("utf-8", errors="replace")

    def request(self, method: str, path: str, body: Any = None, *, content_type: str = "") -> Any:
        """A raw API call as the admin user; JSON in and out (bytes passed through as is)."""
        data: bytes | None
        if isinstance(body, bytes):
            data = body
        else:
            data = None if body is None else json.dumps(body).encode()
        headers = {"Content-Type": content_type or "application/json", "Accept": "application/json"}
        payload = self._send(method, path, data, headers)
        return json.loads(payload) if payload else None

    def _send(self, method: str, path: str, data: bytes | None, headers: dict[str, str]) -> bytes:
        if self._connections is None:
            # Kept open between calls: a new connection is a TLS handshake on both sides, and
            # each test's namespace takes about ten of these calls.
            trusting = ssl.create_default_context(cafile=str(self.pki.ca_cert))
            self._connections = urllib3.PoolManager(ssl_context=trusting)
        headers = {**headers, "Authorization": f"Bearer {self._token}"}
        answer = self._connections.request(
            method, self.server + path, body=data, headers=headers, timeout=30.0, retries=False
        )
        if answer.status >= 400:
            raise ApiError(method, path, answer.status, answer.data.decode(errors="replace"))
        return bytes(answer.data)

    # -- lifecycle ---------------------------------------------------------------------

    def __enter__(self) -> Self:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def start(self) -> None:
        started = time.monotonic()
        self.run_dir.mkdir(parents=True, exist_ok=True)
        (self.run_dir / "logs").mkdir(exist_ok=True)
        self._pki = make_pki(self.run_dir / "pki")
        ports = self._ports = claim_ports(11)
        self.api_port = ports[0]
        etcd_port, etcd_peer, kcm_port, webhook_port, probe_port = ports[1:6]
        kueue_ports, jobset_ports = ports[6:9], ports[9:11]
        self._write_kubeconfig()
        with self._timed("etcd"):
            self._start_etcd(etcd_port, etcd_peer)
        with self._timed("kube-apiserver"):
            self._start_apiserver(etcd_port)
        # CRDs before KCM, so its garbage collector sees the kinds.
        with self._timed("crds"):
            install_crds(self, self._crds())
        with self._timed("kube-controller-manager"):
            self._start_controller_manager(kcm_port)
        if self.lws:
            with self._timed("lws-controller"):
                self._start_lws(webhook_port, probe_port)
        if self.kueue:
            with self._timed("kueue-controller"):
                start_kueue(self, *kueue_ports)
        if self.jobset:
            with self._timed("jobset-controller"):
                start_jobset(self, *jobset_ports)
        self.startup_seconds["total"] = time.monotonic() - started

    def stop(self) -> None:
        for name in reversed(list(self._processes)):
            process = self._processes[name]
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + _STOP_GRACE_S
        for process in self._processes.values():
            try:
                process.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        self._processes.clear()
        release_ports(self._ports)
        self._ports = []
        if self._connections is not None:
            self._connections.clear()
            self._connections = None

    # -- components ----------------------------------------------------------------------

    def _start_etcd(self, port: int, peer: int) -> None:
        client, peer_url = f"http://127.0.0.1:{port}", f"http://127.0.0.1:{peer}"
        self.spawn(
            "etcd",
            [
                str(self.binaries.binary("etcd")),
                "--name=test",
                f"--data-dir={self.run_dir / 'etcd'}",
                f"--listen-client-urls={client}",
                f"--advertise-client-urls={client}",
                f"--listen-peer-urls={peer_url}",
                f"--initial-advertise-peer-urls={peer_url}",
                f"--initial-cluster=test={peer_url}",
                "--unsafe-no-fsync",
                "--quota-backend-bytes=2147483648",
                "--log-level=warn",
            ],
        )
        self.wait_http("etcd", f"{client}/health", lambda body: b'"health":"true"' in body)

    def _start_apiserver(self, etcd_port: int) -> None:
        pki = self.pki
        self.spawn(
            "kube-apiserver",
            [
                str(self.binaries.binary("kube-apiserver")),
                f"--etcd-servers=http://127.0.0.1:{etcd_port}",
                "--bind-address=127.0.0.1",
                f"--secure-port={self.api_port}",
                "--advertise-address=127.0.0.1",
                f"--tls-cert-file={pki.serving_cert}",
                f"--tls-private-key-file={pki.serving_key}",
                f"--client-ca-file={pki.ca_cert}",
                f"--token-auth-file={self._token_file()}",
                "--authorization-mode=RBAC",
                "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
                f"--service-account-key-file={pki.service_account_pub}",
                f"--service-account-signing-key-file={pki.service_account_key}",
                "--service-cluster-ip-range=10.0.0.0/24",
                "--allow-privileged=true",
                f"--cert-dir={self.run_dir / 'apiserver-certs'}",
                *(front_proxy_flags(self.run_dir) if self.kueue else []),
            ],
        )
        self.wait_http("kube-apiserver", f"{self.server}/readyz", lambda body: body == b"ok")

    def _crds(self) -> list[Path]:
        return [
            *([self.binaries.lws_crd] if self.lws else []),
            *(kueue_crds(self) if self.kueue else []),
            *([self.binaries.jobset / JOBSET_CRD] if self.jobset else []),
        ]

    def _start_controller_manager(self, port: int) -> None:
        pki, kubeconfig = self.pki, str(self.kubeconfig)
        self.spawn(
            "kube-controller-manager",
            [
                str(self.binaries.binary("kube-controller-manager")),
                f"--kubeconfig={kubeconfig}",
                f"--authentication-kubeconfig={kubeconfig}",
                f"--authorization-kubeconfig={kubeconfig}",
                "--bind-address=127.0.0.1",
                f"--secure-port={port}",
                "--leader-elect=false",
                "--controllers=*",
                f"--service-account-private-key-file={pki.service_account_key}",
                f"--root-ca-file={pki.ca_cert}",
                "--use-service-account-credentials=true",
                f"--cluster-signing-cert-file={pki.ca_cert}",
                f"--cluster-signing-key-file={pki.ca_key}",
                "--kube-api-qps=500",
                "--kube-api-burst=1000",
                f"--cert-dir={self.run_dir / 'kcm-certs'}",
            ],
        )
        # /healthz answers before the controllers run; the default ServiceAccount proves they do.
        self.wait(
            "kube-controller-manager's controllers",
            lambda: self._exists("/api/v1/namespaces/default/serviceaccounts/default"),
            component="kube-controller-manager",
        )

    def _start_lws(self, webhook_port: int, probe_port: int) -> None:
        binary = self.binaries.binary("lws-controller")
        lws_api = "config.lws.x-k8s.io/v1alpha1"
        start_manager(self, "lws-controller", binary, lws_api, webhook_port, probe_port)
        self._register_lws_webhooks(f"https://127.0.0.1:{webhook_port}")

    def _register_lws_webhooks(self, base_url: str) -> None:
        # The controller's webhooks are what default an LWS and inject the TPU environment;
        # they are registered by URL on loopback instead of through a Service.
        ca_bundle = base64.b64encode(self.pki.ca_cert.read_bytes()).decode()
        configs: dict[str, list[dict[str, Any]]] = {"mutating": [], "validating": []}
        for kind, name, path, (group, resource, operations), pods_only in _LWS_WEBHOOKS:
            hook: dict[str, Any] = {
                "name": name,
                "admissionReviewVersions": ["v1"],
                "sideEffects": "None",
                "failurePolicy": "Fail",
                "clientConfig": {"url": base_url + path, "caBundle": ca_bundle},
                "rules": [
                    {
                        "apiGroups": [group],
                        "apiVersions": ["v1"],
                        "operations": operations,
                        "resources": [resource],
                    }
                ],
            }
            if pods_only:
                hook["objectSelector"] = {
                    "matchExpressions": [
                        {"key": "leaderworkerset.sigs.k8s.io/name", "operator": "Exists"}
                    ]
                }
            configs[kind].append(hook)
        for kind, hooks in configs.items():
            title = "Mutating" if kind == "mutating" else "Validating"
            path = f"/apis/admissionregistration.k8s.io/v1/{kind}webhookconfigurations"
            self.request(
                "POST",
                path,
                {
                    "apiVersion": "admissionregistration.k8s.io/v1",
                    "kind": f"{title}WebhookConfiguration",
                    "metadata": {"name": f"lws-{kind}"},
                    "webhooks": hooks,
                },
            )

    # -- plumbing ------------------------------------------------------------------------

    def _write_kubeconfig(self) -> None:
        pki = self.pki
        self.kubeconfig.write_text(
            json.dumps(
                {
                    "apiVersion": "v1",
                    "kind": "Config",
                    "current-context": self.context,
                    "clusters": [
                        {
                            "name": self.context,
                            "cluster": {
                                "server": self.server,
                                "certificate-authority": str(pki.ca_cert),
                            },
                        }
                    ],
                    "users": [{"name": "admin", "user": {"token": self._token}}],
                    "contexts": [
                        {
                            "name": self.context,
                            "context": {"cluster": self.context, "user": "admin"},
                        }
                    ],
                },
                indent=1,
            )
        )

    def spawn(self, name: str, argv: list[str], *, env: dict[str, str] | None = None) -> None:
        """Start a component of the plane (it dies with this process)."""
        log = self.run_dir / "logs" / f"{name}.log"
        self.logs[name] = log
        with log.open("ab") as sink:
            self._processes[name] = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=sink,
                stderr=subprocess.STDOUT,
                cwd=self.run_dir,
                env={"GOGC": GO_GC_PERCENT, **os.environ, **(env or {})},
                preexec_fn=_die_with_parent,  # noqa: PLW1509
            )

    def _token_file(self) -> Path:
        """The API server's static token file: the admin user's token, in ``system:masters``
        as its client certificate is."""
        path = self.run_dir / "tokens.csv"
        path.write_text(f'{self._token},{ADMIN_USER},{ADMIN_USER},"system:masters"\n')
        path.chmod(0o600)
        return path

    def admin_ssl_context(self) -> ssl.SSLContext:
        """TLS to the API server as the admin user by client certificate (for the proxy and
        readiness probes); made once, since readiness polls call it many times."""
        if self._ssl_context is None:
            context = ssl.create_default_context(cafile=str(self.pki.ca_cert))
            context.load_cert_chain(str(self.pki.admin_cert), str(self.pki.admin_key))
            self._ssl_context = context
        return self._ssl_context

    def _exists(self, path: str) -> bool:
        try:
            self.request("GET", path)
        except ApiError as error:
            if error.code in (404, 429, 503):  # not there, or not served yet (a new CRD)
                return False
            raise
        return True

    def wait_http(self, component: str, url: str, healthy: Callable[[bytes], bool]) -> None:
        context = self.admin_ssl_context() if url.startswith("https") else None

        def probe() -> bool:
            try:
                with urllib.request.urlopen(url, context=context, timeout=2) as response:
                    return healthy(response.read())
            except (OSError, urllib.error.URLError):
                return False

        self.wait(f"{component} to be ready", probe, component=component)

    def wait(
        self,
        what: str,
        ready: Callable[[], bool],
        *,
        timeout: float = _READY_TIMEOUT_S,
        component: str = "",
    ) -> None:
        """Poll ``ready`` until it holds; a ControlPlaneError with the logs' tails if
        ``component`` exits first or ``timeout`` passes."""
        deadline = time.monotonic() + timeout
        delay = 0.02
        while not ready():
            process = self._processes.get(component)
            if process is not None and process.poll() is not None:
                raise ControlPlaneError(
                    f"{component} exited with code {process.returncode} while waiting for {what}:\n"
                    + self.log_tails()
                )
            if time.monotonic() > deadline:
                raise ControlPlaneError(
                    f"timed out after {timeout:.0f}s waiting for {what}:\n" + self.log_tails()
                )
            time.sleep(delay)  # polling an external process's readiness; nothing to wait on
            delay = min(delay * 1.5, 0.25)

    @contextmanager
    def _timed(self, step: str) -> Iterator[None]:
        started = time.monotonic()
        yield
        self.startup_seconds[step] = time.monotonic() - started


def _die_with_parent() -> None:
    """In the child before exec: be killed when the test process dies, however it dies."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


def _dns_label(text: str) -> str:
    cleaned = "".join(ch if ch.isalnum() else "-" for ch in text.lower()).strip("-")
    while "--" in cleaned:
        cleaned = cleaned.replace("--", "-")
    return cleaned or "t"
