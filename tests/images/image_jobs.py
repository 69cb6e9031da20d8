"""Jobs staged by hand in a fake-gcs-server bucket, run by the runtime inside a built image.

The runtime's side of a job is a process and a stored envelope, so no client is needed: the
call is written and signed as the client writes it, ``python -m kinetic_runtime`` runs in the
image's container as the pods' user, and the envelope is read back and checked.
"""

from __future__ import annotations

import hashlib
import os
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import cloudpickle

from kinetic_gke.images import BuildContext, ImageBuilder
from kinetic_gke.k8s.signing import MOUNT_PATH
from kinetic_protocol import ArtifactRef, CallDescriptor, ResultEnvelope, Succeeded, layout
from kinetic_protocol.records import decode_result
from kinetic_protocol.signing import Keyring, open_blob, seal_json
from kinetic_runtime.stores import open_store
from kinetic_testing.images.fixtures import ImageBuilds

POD_USER = "1000:1000"
"""The ``runAsUser``/``runAsGroup`` of the pods Kinetic creates."""
KEYS_IN_CONTAINER = MOUNT_PATH.replace("/var/run/", "/run/", 1)
"""Where pods get the signing keys; ``/var/run`` links to ``/run`` in the image, and buildah
mounts a volume at a path that goes through that link under its own ``/run``, unseen."""
RUN_TIMEOUT_S = 600.0
IMAGE_SITE = "/opt/venv/lib/python3.11/site-packages"

PROBE = """
def probe():
    import hashlib, importlib.metadata, importlib.util, os, sys
    from pathlib import Path

    import kinetic_runtime

    runtime = Path(kinetic_runtime.__file__).parent
    six = importlib.util.find_spec("six")
    datasets = importlib.util.find_spec("datasets")
    return {
        "uid": os.getuid(),
        "gid": os.getgid(),
        "python": sys.executable,
        "runtime": str(runtime),
        "runtime_version": importlib.metadata.version("kinetic-runtime"),
        "runtime_main": hashlib.sha256((runtime / "main.py").read_bytes()).hexdigest(),
        "six": six.origin if six else None,
        "datasets": datasets.origin if datasets else None,
    }
"""
"""A job reporting who runs it and where its interpreter, runtime, ``six`` and ``datasets``
(the runtime's ``hf`` extra) come from."""


def job_function(source: str, name: str) -> Callable[..., Any]:
    """A function defined in ``__main__`` from ``source``, so it is pickled by value (this
    test module is not importable inside the image)."""
    namespace: dict[str, Any] = {"__name__": "__main__"}
    exec(compile(source, f"<job {name}>", "exec"), namespace)
    function: Callable[..., Any] = namespace[name]
    return function


@dataclass
class ImageRun:
    exit_code: int
    output: str
    envelope: ResultEnvelope | None

    def value(self) -> Any:
        """The function's return value; fails with the job's output when it did not succeed."""
        assert isinstance(self.envelope, Succeeded), f"exit {self.exit_code}:\n{self.output}"
        return cloudpickle.loads(self.envelope.value)


class BucketJobs:
    """Stage jobs in ``bucket`` (``gs://NAME`` on fake-gcs-server) and run them in images."""

    def __init__(self, bucket: str, emulator: str, tmp_path: Path) -> None:
        self.bucket = bucket
        self.emulator = emulator
        self.store = open_store(bucket)
        self.keys_dir = tmp_path / "keys"
        self.keyring = Keyring.generate(source=str(self.keys_dir))
        self.keys_dir.mkdir()
        for name, text in self.keyring.entries().items():
            (self.keys_dir / name).write_text(text)
        for path in (self.keys_dir, *self.keys_dir.iterdir()):  # as a Secret volume gives them
            os.chown(path, 1000, 1000)

    def stage(self, fn: Callable[..., Any], *, requirements: Sequence[str] = ()) -> str:
        job_id = f"img-{uuid.uuid4().hex[:12]}"
        payload: bytes = cloudpickle.dumps((fn, (), {}))
        key = layout.payload_key(job_id)
        self.store.write(key, payload)
        ref = ArtifactRef(key=key, sha256=hashlib.sha256(payload).hexdigest(), size=len(payload))
        call = CallDescriptor(
            job_id=job_id, func_name=fn.__name__, payload=ref, requirements=list(requirements)
        )
        self.store.write(layout.call_key(job_id), seal_json(self.keyring, "call", job_id, call))
        return job_id

    def run_result(self, job_id: str) -> ResultEnvelope | None:
        """The job's result envelope, checked as the client checks it (None if none)."""
        key = layout.result_key(job_id)
        if not self.store.exists(key):
            return None
        body = open_blob(self.keyring, "result", job_id, self.store.read(key), key=key)
        return decode_result(body, what=key)

    def run_in(
        self, builds: ImageBuilds, image: str, job_id: str, env: dict[str, str] | None = None
    ) -> ImageRun:
        """``python -m kinetic_runtime`` for ``job_id`` in ``image``, as the pods' user, with
        the keys mounted as a pod's Secret volume is (and ``env``, as a pod spec sets it)."""
        done = builds.buildah.run_in_image(
            image,
            [
                "python",
                "-m",
                "kinetic_runtime",
                "--store",
                self.bucket,
                "--job",
                job_id,
                "--workdir",
                f"/workspace/{job_id}",
            ],
            user=POD_USER,
            env={
                "STORAGE_EMULATOR_HOST": self.emulator,
                "KINETIC_SIGNING_KEYS": KEYS_IN_CONTAINER,
                **(env or {}),
            },
            volumes={self.keys_dir: KEYS_IN_CONTAINER},
            timeout=RUN_TIMEOUT_S,
        )
        return ImageRun(done.returncode, done.stdout + done.stderr, self.run_result(job_id))


class BuildahImageBuilder(ImageBuilder):
    """What ``resolve_image`` builds through, building with buildah here instead of Cloud
    Build: the context and Dockerfile are exactly the ones Kinetic generated."""

    def __init__(self, builds: ImageBuilds) -> None:
        super().__init__(project="test", location="local")
        self.builds = builds
        self.contexts: dict[str, BuildContext] = {}
        self.local_tags: dict[str, str] = {}

    def image_exists(self, uri: str) -> bool:
        return uri in self.local_tags

    def build(self, context: BuildContext, uri: str) -> str:
        self.contexts[uri] = context
        self.local_tags[uri] = self.builds.build(
            context.files, context.content_hash, context.category
        )
        return uri
