"""Fixtures for the batch unit tests: isolated settings, and a fake backend behind a real store.

The fake backend stands in for processes only; everything the batch engine writes still goes
through the real submission path into a real :class:`LocalStore` under ``tmp_path``.
"""

import hashlib
import os
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import cloudpickle
import pytest

import kinetic
from kinetic.batch import fanout
from kinetic.bookkeeping.sealed import BatchSeal
from kinetic.config import resolve_settings
from kinetic.decorator import RemoteFunction
from kinetic.options import RunOptions
from kinetic.packaging import CodeBundle
from kinetic.submission import Target
from kinetic_protocol import (
    NO_ENV,
    ArtifactRef,
    Capabilities,
    JobRecord,
    JobState,
    JobStatus,
    Keyring,
    Preparation,
    PrepareRequest,
    Succeeded,
    layout,
)
from kinetic_protocol.records import encode_result
from kinetic_protocol.signing import seal_blob
from kinetic_runtime.calls import BatchInput, StoredCall, load_call, read_call, read_input
from kinetic_runtime.keydir import directory_keyring
from kinetic_runtime.stores.local import LocalStore


class FakeBackend:
    """Runs each call in-process as it is submitted, stores its result, reports SUCCEEDED.

    It remembers every record it was given, in submission order.
    """

    name = "fake"
    poll_bounds = (0.001, 0.01)
    capabilities = Capabilities(local_data=True)
    declared_settings = ()

    def __init__(self, store: LocalStore) -> None:
        self.store = store
        self.store_uri = store.uri
        self.submitted: list[JobRecord] = []
        self._lock = threading.Lock()

    def prepare(self, request: PrepareRequest) -> Preparation:
        return Preparation()

    # Its records name the local backend, whose keyring (the Kinetic home's) verifies them.
    def signing_keys(self, *, create: bool, refresh: bool = False) -> Keyring:
        return directory_keyring(Path(os.environ["KINETIC_HOME"]) / "keys", create=create)

    def replace_signing_keys(self, keyring: Keyring) -> None:
        raise NotImplementedError

    def submit(self, record: JobRecord, *, env: Mapping[str, str] = NO_ENV) -> None:
        with self._lock:
            self.submitted.append(record)
        member = None
        if record.group_id is not None and record.group_index is not None:
            member = BatchInput(record.group_id, record.group_index)
        where = StoredCall.of(record.job_id, member)
        keyring = self.signing_keys(create=False)
        call = read_call(self.store, where, record.job_id, keyring)
        arguments = None if member is None else read_input(self.store, call, member)
        fn, args, kwargs = load_call(self.store.read(call.payload.key), arguments, [])
        value = cloudpickle.dumps(fn(*args, **kwargs))
        envelope = Succeeded(job_id=record.job_id, value=value)
        sealed = seal_blob(keyring, "result", record.job_id, encode_result(envelope))
        self.store.write(layout.result_key(record.job_id), sealed)

    def statuses(self, records: Sequence[JobRecord]) -> dict[str, JobState]:
        return {record.job_id: JobState(status=JobStatus.SUCCEEDED) for record in records}

    def logs(self, record: JobRecord, *, tail: int | None = None) -> str:
        return ""

    def follow_logs(self, record: JobRecord) -> Iterator[str]:
        return iter(())

    def delete(self, record: JobRecord, *, timeout: float, poll_interval: float) -> None:
        return None

    def list_job_ids(self) -> list[str]:
        return [record.job_id for record in self.submitted]


@pytest.fixture(autouse=True)
def isolated_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No ``KINETIC_*`` or GCP settings from outside; a fresh home under ``tmp_path``."""
    for name in list(os.environ):
        if name.startswith("KINETIC_") or name == "GOOGLE_CLOUD_PROJECT":
            monkeypatch.delenv(name)
    home = tmp_path / "kinetic-home"
    monkeypatch.setenv("KINETIC_HOME", str(home))
    monkeypatch.setenv("KINETIC_PROFILES_FILE", str(tmp_path / "profiles.json"))
    return home


@pytest.fixture
def store(tmp_path: Path) -> LocalStore:
    return LocalStore(tmp_path / "store")


def home_seal() -> BatchSeal:
    """The seal of a batch on the local backend: the Kinetic home's keyring (made if absent)."""
    return BatchSeal(
        lambda refresh: directory_keyring(Path(os.environ["KINETIC_HOME"]) / "keys", create=True)
    )


@pytest.fixture
def seal() -> BatchSeal:
    return home_seal()


@pytest.fixture
def fake_backend(
    store: LocalStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[FakeBackend]:
    """``run_async_map`` resolves to this fake backend and ``store`` (and a tiny bundle).

    Any batch thread still running at the end is joined, so no test leaks one.
    """
    backend = FakeBackend(store)
    data = b"not really a zip"
    digest = hashlib.sha256(data).hexdigest()
    bundle = CodeBundle(
        root=tmp_path,
        data=data,
        ref=ArtifactRef(key=layout.bundle_key(digest), sha256=digest, size=len(data)),
        workdir=".",
    )

    def resolve(options: RunOptions, fn: Callable[..., Any], data: object = ()) -> Target:
        settings = resolve_settings(backend="local", quiet=True)
        return Target(options, settings, backend, store, bundle, image_uri="")

    monkeypatch.setattr(fanout, "resolve_target", resolve)
    yield backend
    for thread in threading.enumerate():
        if thread.name.startswith("kinetic-batch-"):
            thread.join(timeout=30)


@pytest.fixture
def nothing_resolved(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail the test if ``run_async_map`` gets as far as resolving a backend."""

    def refuse(options: RunOptions, fn: Callable[..., Any]) -> Target:
        raise AssertionError("run_async_map resolved a backend before rejecting its arguments")

    monkeypatch.setattr(fanout, "resolve_target", refuse)


def identity(x: Any) -> Any:
    return x


@pytest.fixture
def remote() -> RemoteFunction[[Any], Any]:
    """A decorated function; decorating resolves nothing."""
    return kinetic.run(accelerator="cpu", backend="local")(identity)
