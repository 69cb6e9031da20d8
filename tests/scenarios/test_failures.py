"""What users see when their code, their input or the stored state is wrong."""

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import scenario_funcs as uf
from scenario_support import ScenarioBackend, client_only, run_script

import kinetic
from kinetic import ConfigError, JobHandle, JobNotFoundError, JobStatus, SerializationError
from kinetic_protocol import CorruptRecordError, SigningKeyError, layout

# --- the user's function raises -------------------------------------------------------------


def test_remote_exception_is_reraised_as_its_own_type_with_the_remote_traceback(
    kinetic_backend: ScenarioBackend,
) -> None:
    job = kinetic_backend.decorate()(uf.fail_with).run_async("bad input", 7)
    with pytest.raises(uf.ScenarioError) as caught:
        job.result()
    exc = caught.value
    assert type(exc) is uf.ScenarioError
    assert exc.code == 7
    assert str(exc) == "bad input (code 7)"
    remote_tb: str = exc.remote_traceback  # type: ignore[attr-defined]
    assert "fail_with" in remote_tb
    assert "raise ScenarioError(message, code)" in remote_tb
    assert "kinetic_runtime" not in remote_tb, "the runtime's own frames should be dropped"
    notes = "\n".join(exc.__notes__)
    assert job.job_id in notes
    assert "raise ScenarioError(message, code)" in notes


def test_a_failed_job_is_kept_for_debugging(kinetic_backend: ScenarioBackend) -> None:
    job = kinetic_backend.decorate()(uf.fail_with).run_async("kept", 1)
    with pytest.raises(uf.ScenarioError):
        job.result()
    assert job.status() is JobStatus.FAILED
    # Every host raises. On a slice, the first host to fail stops it, and the leader's output
    # (what tail() shows by default) may end before its own traceback: the failed host's has it.
    assert "ScenarioError" in job.tail(20, host="all")
    assert kinetic_backend.store().exists(layout.job_record_key(job.job_id))
    with pytest.raises(uf.ScenarioError, match="kept"):
        job.result()  # still there, still raising
    job.cleanup()
    assert job.status() is JobStatus.NOT_FOUND


@pytest.mark.parametrize(
    ("func", "shown"),
    [(uf.return_generator, "<generator object"), (uf.return_lock, "lock object")],
    ids=["generator", "lock"],
)
@client_only
def test_an_unpicklable_return_value_fails_with_its_repr(
    kinetic_backend: ScenarioBackend, func: object, shown: str
) -> None:
    job = kinetic_backend.decorate()(func).run_async()
    with pytest.raises(SerializationError, match="cannot be pickled") as caught:
        job.result()
    assert shown in str(caught.value)
    assert getattr(caught.value, "job_phase", None) == "serialize_result"
    assert job.status() is JobStatus.FAILED


# --- bad input, refused before anything is stored -------------------------------------------


@client_only
def test_an_unpicklable_argument_is_named_and_nothing_is_stored(
    kinetic_backend: ScenarioBackend,
) -> None:
    add = kinetic_backend.decorate()(uf.add)
    with pytest.raises(SerializationError, match=r"Argument 1 of add\(\)") as positional:
        add.run_async(1, threading.Lock())
    assert "lock" in str(positional.value)
    with pytest.raises(SerializationError, match=r"Keyword argument 'b' of add\(\)"):
        add.run_async(1, b=threading.Lock())
    assert kinetic_backend.store().list("jobs/") == []
    assert kinetic.list_jobs(backend=kinetic_backend.name) == []


@client_only
def test_an_unpicklable_closure_variable_is_named(kinetic_backend: ScenarioBackend) -> None:
    guard = threading.Lock()

    def locked_add(a: int) -> int:
        with guard:
            return a + 1

    remote = kinetic_backend.decorate()(locked_add)
    with pytest.raises(SerializationError, match=r"closure variable 'guard'"):
        remote.run_async(1)
    assert kinetic_backend.store().list("jobs/") == []


@client_only
def test_an_unpicklable_global_of_a_script_function_is_named(
    kinetic_backend: ScenarioBackend, tmp_path: Path
) -> None:
    done = run_script(
        f"""
        import threading
        import kinetic

        REGISTRY_LOCK = threading.Lock()

        @kinetic.run(**{kinetic_backend.options!r})
        def register(name):
            with REGISTRY_LOCK:
                return name

        try:
            register.run_async("x")
        except kinetic.SerializationError as exc:
            print("ERROR:", exc)
        """,
        tmp_path / "project",
    )
    assert "ERROR: Function register cannot be pickled" in done.stdout
    assert "global 'REGISTRY_LOCK'" in done.stdout
    assert kinetic_backend.store().list("jobs/") == []


def _stored_files(store_root: Path) -> list[str]:
    """Every object the local backend's ``file://`` store holds, as paths under its root."""
    if not store_root.exists():
        return []
    return sorted(str(p.relative_to(store_root)) for p in store_root.rglob("*") if p.is_file())


def _submit_through(path: str, remote: Any) -> None:
    """Submit one call of ``remote`` (``uf.add``) by ``path``: the call a user writes."""
    if path == "call":
        remote(1, b=2)
    elif path == "run_async":
        remote.run_async(1, b=2)
    else:
        remote.run_async_map([1, 2, 3])


def _unreadable_keys(home: Path, monkeypatch: pytest.MonkeyPatch) -> type[Exception]:
    """Signing keys that cannot be read or made (a file where their directory goes): as a
    cluster whose key Secret the user may not read refuses a gke job."""
    home.mkdir(parents=True, exist_ok=True)
    (home / "keys").write_text("not a key directory")
    return SigningKeyError


def _malformed_debug_wait(home: Path, monkeypatch: pytest.MonkeyPatch) -> type[Exception]:
    monkeypatch.setenv("KINETIC_DEBUG_WAIT", "ten minutes")
    return ConfigError


@pytest.mark.parametrize("path", ["call", "run_async", "run_async_map"])
@pytest.mark.parametrize(
    "refusal", [_malformed_debug_wait, _unreadable_keys], ids=["debug-wait", "signing-keys"]
)
def test_a_pre_flight_refusal_comes_before_anything_is_uploaded(
    local_backend: ScenarioBackend,
    isolated_kinetic: Path,
    store_root: Path,
    monkeypatch: pytest.MonkeyPatch,
    path: str,
    refusal: Callable[[Path, pytest.MonkeyPatch], type[Exception]],
) -> None:
    """Every check that can refuse a job runs before the code bundle (or data) is written to
    the store, on every way to submit: the store is left as it was, empty."""
    error = refusal(isolated_kinetic, monkeypatch)
    remote = local_backend.decorate(debug=True)(uf.add)
    with pytest.raises(error):
        _submit_through(path, remote)
    assert _stored_files(store_root) == []
    assert kinetic.list_jobs(backend="local") == []


@client_only
def test_an_unknown_accelerator_is_refused_at_decoration_listing_valid_names(
    kinetic_backend: ScenarioBackend,
) -> None:
    with pytest.raises(ConfigError) as caught:
        kinetic_backend.decorate(accelerator="tpu-v5e-3")
    message = str(caught.value)
    assert "'tpu-v5e-3'" in message
    assert "'cpu'" in message and "l4" in message and "v5e" in message


def test_an_unknown_backend_lists_the_available_ones() -> None:
    remote = kinetic.run(accelerator="cpu", backend="no-such-backend")(uf.add)
    with pytest.raises(ConfigError, match="no-such-backend") as caught:
        remote.run_async(1)
    assert "local" in str(caught.value)


def test_a_malformed_store_uri_is_a_config_error(
    local_backend: ScenarioBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KINETIC_STORE", "bogus://x")
    with pytest.raises(ConfigError, match=r"bogus://x"):
        local_backend.decorate()(uf.add).run_async(1)


@client_only
def test_attaching_to_a_job_that_does_not_exist_raises_job_not_found(
    kinetic_backend: ScenarioBackend,
) -> None:
    with pytest.raises(JobNotFoundError, match="add-20000101-000000-abcdef0"):
        kinetic.attach("add-20000101-000000-abcdef0", backend=kinetic_backend.name)


# --- handles and stored records -------------------------------------------------------------


@client_only
def test_from_dict_names_missing_fields_and_ignores_unknown_ones(
    kinetic_backend: ScenarioBackend,
) -> None:
    job = kinetic_backend.decorate()(uf.add).run_async(2, b=2)
    data = job.to_dict()

    partial = {k: v for k, v in data.items() if k not in {"job_id", "bucket_name"}}
    with pytest.raises(ConfigError) as caught:
        JobHandle.from_dict(partial)
    assert "job_id" in str(caught.value) and "bucket_name" in str(caught.value)

    rebuilt = JobHandle.from_dict({**data, "added_by_a_newer_kinetic": {"x": 1}})
    assert rebuilt == job
    assert rebuilt.result() == 4


@pytest.mark.parametrize("damage", ["garbage", "truncated"])
@client_only
def test_a_corrupt_stored_record_names_the_object(
    kinetic_backend: ScenarioBackend, damage: str
) -> None:
    job = kinetic_backend.decorate()(uf.add).run_async(1)
    job.wait()
    store = kinetic_backend.store()
    key = layout.job_record_key(job.job_id)
    original = store.read(key)
    store.write(key, b"\x00not json{" if damage == "garbage" else original[: len(original) // 2])
    with pytest.raises(CorruptRecordError) as caught:
        kinetic.attach(job.job_id, backend=kinetic_backend.name)
    assert f"jobs/{job.job_id}/handle.json" in str(caught.value)
