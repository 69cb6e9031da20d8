"""Stage a job by hand in a ``file://`` store and run ``python -m kinetic_runtime`` on it.

The runtime's contract is about a process (its exit status) and a stored envelope, so the tests
run the real entrypoint in a subprocess, with no client in between. (The tests' ``conftest.py``
puts this directory on ``sys.path``.)
"""

import ctypes
import hashlib
import json
import os
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import cloudpickle

from kinetic_protocol import (
    ArtifactRef,
    CallDescriptor,
    DataSpec,
    DebugOptions,
    ResultEnvelope,
    Volume,
    layout,
)
from kinetic_protocol.records import decode_result
from kinetic_protocol.signing import Keyring, SignedKind, open_blob, seal_json
from kinetic_runtime.stores import LocalStore

RUN_TIMEOUT_S = 120.0


def pickled_call(fn: Any, *args: Any, **kwargs: Any) -> bytes:
    """The payload the client would store: ``(fn, args, kwargs)``, cloudpickled."""
    data: bytes = cloudpickle.dumps((fn, args, kwargs))
    return data


@dataclass
class RuntimeRun:
    """How one ``python -m kinetic_runtime`` ended."""

    exit_code: int
    output: str
    envelope: ResultEnvelope | None


@dataclass
class JobStage:
    """A ``file://`` store and a work directory under ``tmp_path``, for jobs staged by hand."""

    tmp_path: Path
    store: LocalStore = field(init=False)

    def __post_init__(self) -> None:
        self.store = LocalStore(self.tmp_path / "store")
        self.workdir = self.tmp_path / "work"
        self.keys_dir = self.tmp_path / "keys"
        self.keyring = Keyring.generate(source=str(self.keys_dir))
        self.keys_dir.mkdir()
        for name, text in self.keyring.entries().items():
            (self.keys_dir / name).write_text(text)

    def envelope(self, key: str, job_id: str) -> ResultEnvelope:
        """The envelope at ``key``, checked as the client checks it."""
        kind: SignedKind = "result" if key == layout.result_key(job_id) else "host-result"
        body = open_blob(self.keyring, kind, job_id, self.store.read(key), key=key)
        return decode_result(body, what=key)

    def put(self, key: str, data: bytes, *, sha256: str | None = None) -> ArtifactRef:
        """Store ``data``; the reference claims ``sha256`` (default: the true digest)."""
        self.store.write(key, data)
        digest = sha256 or hashlib.sha256(data).hexdigest()
        return ArtifactRef(key=key, sha256=digest, size=len(data))

    def stage(
        self,
        job_id: str,
        payload: bytes,
        *,
        payload_sha256: str | None = None,
        bundle: bytes | None = None,
        requirements: Sequence[str] = (),
        output_dir: str = "",
        debug: DebugOptions | None = None,
        data: Sequence[DataSpec] = (),
        volumes: Sequence[Volume] = (),
        seal: Callable[[CallDescriptor, Keyring], bytes] | None = None,
    ) -> str:
        """Write the payload, bundle (if any) and call descriptor of ``job_id``; ``seal``
        replaces how the call is signed (a test of what the runtime refuses)."""
        bundle_ref = None
        if bundle is not None:
            bundle_ref = self.put(layout.bundle_key(hashlib.sha256(bundle).hexdigest()), bundle)
        call = CallDescriptor(
            job_id=job_id,
            func_name="test_function",
            payload=self.put(layout.payload_key(job_id), payload, sha256=payload_sha256),
            bundle=bundle_ref,
            requirements=list(requirements),
            output_dir=output_dir,
            debug=debug,
            data=list(data),
            volumes=list(volumes),
        )
        sealed = seal(call, self.keyring) if seal else seal_json(self.keyring, "call", job_id, call)
        self.store.write(layout.call_key(job_id), sealed)
        return job_id

    def run(
        self,
        job_id: str,
        *,
        python: str = sys.executable,
        store_uri: str | None = None,
        env: dict[str, str] | None = None,
        own_workdir: bool = False,
    ) -> RuntimeRun:
        """Run the runtime for ``job_id`` as its own process and read what it stored; with
        ``own_workdir`` it is given no ``--workdir`` and makes its own (as in a pod)."""
        command = [
            python,
            "-m",
            "kinetic_runtime",
            "--store",
            store_uri or self.store.uri,
            "--job",
            job_id,
            *([] if own_workdir else ["--workdir", str(self.workdir)]),
        ]
        done = subprocess.run(
            command,
            capture_output=True,
            text=True,
            check=False,
            timeout=RUN_TIMEOUT_S,
            cwd=self.tmp_path,
            env=self._environment(env),
        )
        envelope = None
        if self.store.exists(layout.result_key(job_id)):
            envelope = self.envelope(layout.result_key(job_id), job_id)
        return RuntimeRun(done.returncode, done.stdout + done.stderr, envelope)

    def start(self, job_id: str, *, env: dict[str, str] | None = None) -> "subprocess.Popen[str]":
        """Start the runtime for ``job_id`` and return at once (its output: stdout, with
        stderr in it), for a test that signals it while it runs."""
        command = [
            sys.executable,
            "-m",
            "kinetic_runtime",
            "--store",
            self.store.uri,
            "--job",
            job_id,
            "--workdir",
            str(self.workdir),
        ]
        return subprocess.Popen(
            command,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            cwd=self.tmp_path,
            env=self._environment(env),
        )

    def _environment(self, env: dict[str, str] | None) -> dict[str, str]:
        return {**os.environ, "KINETIC_SIGNING_KEYS": str(self.keys_dir), **(env or {})}


_PR_SET_DUMPABLE = 4


def in_child(body: Callable[[], dict[str, Any]], *, as_nobody: bool) -> dict[str, Any]:
    """Run ``body`` in a forked child (``unshare`` changes a process for good); its answer
    comes back as JSON through a pipe."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - reported through the pipe
        try:
            if as_nobody and os.geteuid() == 0:
                os.setgid(65534)
                os.setuid(65534)
                # setuid makes a process undumpable, which hides /proc/self/*_map from it; a
                # user who started as nobody would not be.
                ctypes.CDLL(None).prctl(_PR_SET_DUMPABLE, 1, 0, 0, 0)
            answer = body()
        except BaseException as exc:
            answer = {"error": f"{type(exc).__name__}: {exc}"}
        os.write(write, json.dumps(answer).encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as pipe:
        answer = json.loads(pipe.read() or b"{}")
    os.waitpid(pid, 0)
    return answer
