"""Where data's bytes start, on every backend: uploads of local data (content-addressed, once),
``hf://`` datasets loaded with the real ``datasets`` library, and ``fuse=True`` where the
backend cannot mount lazily."""

import logging
from pathlib import Path

import data_userfuncs as uf
import pytest
from data_support import build_hf_repo, capabilities, hf_environment, put_objects, uploaded_hashes
from scenario_support import ScenarioBackend, client_only

from kinetic import Data, _log, session
from kinetic_protocol import DataUnavailableError

pytestmark = [pytest.mark.gcs, client_only]

UPLOAD_LOG = "kinetic.data.upload"


@pytest.fixture
def dataset(tmp_path: Path) -> Path:
    root = tmp_path / "dataset"
    root.mkdir()
    (root / "train.csv").write_text("x,y\n1,2\n")
    (root / "notes.txt").write_text("v1")
    return root


def _events(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == UPLOAD_LOG]


def test_unchanged_local_data_is_uploaded_once_and_a_changed_file_uploads_anew(
    kinetic_backend: ScenarioBackend, dataset: Path, caplog: pytest.LogCaptureFixture
) -> None:
    if capabilities(kinetic_backend).local_data:
        pytest.skip("this backend's jobs read local data in place: nothing is uploaded")
    caplog.set_level(logging.INFO, logger=UPLOAD_LOG)
    remote = kinetic_backend.decorate()(uf.read_paths)
    assert remote(Data(str(dataset)))
    [first] = uploaded_hashes(kinetic_backend)
    assert any("data.uploading" in event for event in _events(caplog))
    stored = kinetic_backend.store().list(f"data/{first}/")
    caplog.clear()

    with session.fresh():  # a new process, as far as caches go: only the marker can tell
        seen = kinetic_backend.decorate()(uf.read_paths)(Data(str(dataset)))
    events = _events(caplog)
    assert any("data.cached" in e and first[:16] in e for e in events), events
    assert not any("data.uploading" in e for e in events), "a cache hit uploads nothing"
    assert kinetic_backend.store().list(f"data/{first}/") == stored
    assert next(iter(seen.values()))["notes.txt"] == "v1"
    caplog.clear()

    (dataset / "notes.txt").write_text("v2")
    seen = remote(Data(str(dataset)))
    assert next(iter(seen.values()))["notes.txt"] == "v2"
    assert len(uploaded_hashes(kinetic_backend)) == 2, "a changed file is a new hash"
    assert any("data.uploading" in event for event in _events(caplog))


def test_local_data_the_backend_can_see_is_never_copied_to_the_store(
    kinetic_backend: ScenarioBackend, dataset: Path
) -> None:
    if not capabilities(kinetic_backend).local_data:
        pytest.skip("this backend's jobs cannot see this machine's files")
    seen = kinetic_backend.decorate()(uf.read_paths)(Data(str(dataset)))
    assert list(seen) == [str(dataset)]
    assert kinetic_backend.store().list("data/") == []


@pytest.fixture
def hf_mirror(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """``owner/tiny`` built here and set as the hub mirror; the variables jobs must capture."""
    mirror = tmp_path / "hub-mirror"
    build_hf_repo(mirror, "owner/tiny")
    environment = hf_environment(mirror, tmp_path / "hf-home")
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    return list(environment)


@pytest.mark.backends("local")  # loaded in the job, from the mirror: no store, no backend
def test_an_hf_dataset_built_here_is_loaded_and_handed_over_as_a_saved_directory(
    kinetic_backend: ScenarioBackend, hf_mirror: list[str]
) -> None:
    remote = kinetic_backend.decorate(capture_env_vars=hf_mirror)(uf.hf_many)
    job = remote.run_async(
        Data("hf://owner/tiny?split=train"),
        Data("hf://owner/tiny?config_name=shout&split=train", hf_trust_remote_code=True),
        Data("hf://owner/tiny"),
    )
    rows = job.result(timeout=180, cleanup=False)
    assert rows == [
        {"rows": ["alpha", "beta", "gamma"], "is_dir": True},
        {"rows": ["ALPHA", "BETA"], "is_dir": True},
        {"test": ["beta"], "train": ["alpha", "beta", "gamma"]},
    ]
    assert "hf_trust_remote_code=True" in job.logs(), "remote code is warned about loudly"
    job.cleanup()


@pytest.mark.backends("local")  # loaded in the job, from the mirror: no store, no backend
def test_an_hf_dataset_that_does_not_load_fails_the_job_in_the_data_phase(
    kinetic_backend: ScenarioBackend, hf_mirror: list[str]
) -> None:
    remote = kinetic_backend.decorate(capture_env_vars=hf_mirror)(uf.not_reached)
    job = remote.run_async(Data("hf://owner/tiny?config_name=nope"))
    with pytest.raises(DataUnavailableError, match="'nope' not found") as caught:
        job.result(timeout=180)
    assert caught.value.job_phase == "data"  # type: ignore[attr-defined]
    assert job.list_outputs() == []


def test_fuse_where_the_backend_cannot_mount_lazily_stages_the_data_up_front(
    kinetic_backend: ScenarioBackend,
    dataset: Path,
    gcs_bucket: str,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    if capabilities(kinetic_backend).fuse:
        pytest.skip("this backend mounts fuse=True data lazily (see test_data_fuse)")
    monkeypatch.setattr(_log, "_noticed", set())  # the notice is said once per process
    put_objects(gcs_bucket, {"lazy/a.txt": "A"})
    remote = kinetic_backend.decorate()(uf.read_paths)
    seen = remote(Data(str(dataset), fuse=True), Data(f"{gcs_bucket}/lazy/", fuse=True))
    contents = list(seen.values())
    assert contents[0]["train.csv"] == "x,y\n1,2\n"
    assert contents[1] == {"a.txt": "A"}
    assert "staged before the function runs" in caplog.text
