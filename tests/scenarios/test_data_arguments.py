"""``kinetic.Data`` as arguments, on every backend: the function receives plain ``str`` paths,
wherever the data sits in the call and wherever its bytes started (this machine, a bucket)."""

import io
import zipfile
from pathlib import Path

import data_userfuncs as uf
import pytest
from data_support import capabilities, put_objects, uploaded_hashes
from scenario_support import ScenarioBackend, client_only, run_script

from kinetic import ConfigError, Data
from kinetic.backends import get_backend
from kinetic.config import resolve_settings
from kinetic_protocol import DataUnavailableError
from kinetic_testing.signed import read_call

pytestmark = [pytest.mark.gcs, client_only]


@pytest.fixture
def dataset(tmp_path: Path) -> Path:
    root = tmp_path / "dataset"
    (root / "nested").mkdir(parents=True)
    (root / "train.csv").write_text("x,y\n1,2\n")
    (root / "nested" / "labels.txt").write_text("cat\ndog\n")
    return root


def test_a_local_directory_and_a_single_local_file_arrive_as_str_paths(
    kinetic_backend: ScenarioBackend, dataset: Path, tmp_path: Path
) -> None:
    single = tmp_path / "config.json"
    single.write_text('{"lr": 0.1}')
    remote = kinetic_backend.decorate()(uf.two_arguments)
    seen = remote(Data(str(dataset)), Data(str(single)))
    assert seen["directory"]["type"] == seen["single"]["type"] == "str"
    assert seen["directory"]["files"] == {
        "train.csv": "x,y\n1,2\n",
        "nested/labels.txt": "cat\ndog\n",
    }
    assert seen["single"]["files"] == {"config.json": '{"lr": 0.1}'}
    assert Path(seen["single"]["path"]).name == "config.json", "a file resolves to the file"
    if capabilities(kinetic_backend).local_data:  # read in place, never copied
        assert seen["directory"]["path"] == str(dataset)
        assert seen["single"]["path"] == str(single)


def test_nested_data_is_replaced_and_containers_keep_their_types_and_identity(
    kinetic_backend: ScenarioBackend, dataset: Path
) -> None:
    data = Data(str(dataset))
    shared = [data]
    remote = kinetic_backend.decorate()(uf.nested)
    seen = remote(shared, shared, {"data": data}, uf.Pair(data, 7), config=uf.Config(data, "c"))
    assert seen["types"] == ["str"]
    assert len(set(seen["paths"])) == 1, "one Data object is one path, wherever it appears"
    assert seen["same_list"] is True, "aliasing survives"
    assert seen["container_types"] == ["Pair", "Config", "dict"]
    assert seen["tuple_kept"] is True
    assert seen["label"] == "c"
    assert seen["files"]["train.csv"] == "x,y\n1,2\n"


def test_a_gs_prefix_and_a_single_object_are_downloaded_before_the_function_runs(
    kinetic_backend: ScenarioBackend, gcs_bucket: str
) -> None:
    put_objects(
        gcs_bucket,
        {
            "sets/train/a.txt": "A",
            "sets/train/deep/b.txt": "B",
            "sets/other.txt": "no",
            "weights/model.bin": "W",
        },
    )
    remote = kinetic_backend.decorate()(uf.two_arguments)
    seen = remote(Data(f"{gcs_bucket}/sets/train/"), Data(f"{gcs_bucket}/weights/model.bin"))
    assert seen["directory"]["files"] == {"a.txt": "A", "deep/b.txt": "B"}
    assert seen["single"]["files"] == {"model.bin": "W"}
    assert seen["directory"]["type"] == "str"


@pytest.mark.parametrize(
    ("name", "says"),
    [("missing/", "holds no objects"), ("missing.bin", "does not exist")],
    ids=["prefix", "object"],
)
def test_missing_gs_data_fails_the_job_in_the_data_phase_before_user_code_runs(
    kinetic_backend: ScenarioBackend, gcs_bucket: str, name: str, says: str
) -> None:
    job = kinetic_backend.decorate()(uf.not_reached).run_async(Data(f"{gcs_bucket}/{name}"))
    with pytest.raises(DataUnavailableError, match=says) as caught:
        job.result(timeout=120)
    assert caught.value.job_phase == "data"  # type: ignore[attr-defined]
    assert f"{gcs_bucket}/{name}" in str(caught.value)
    assert "before your function ran: data" in "".join(caught.value.__notes__)
    assert job.list_outputs() == [], "the function never ran"


def test_local_data_that_cannot_be_read_is_refused_before_anything_is_submitted(
    kinetic_backend: ScenarioBackend, dataset: Path, tmp_path: Path
) -> None:
    if capabilities(kinetic_backend).local_data:
        pytest.skip("this backend's jobs read local data in place; nothing is read at submit")
    (dataset / "broken.bin").symlink_to(tmp_path / "gone")
    remote = kinetic_backend.decorate()(uf.two_arguments)
    with pytest.raises(ConfigError, match=r"cannot read .*broken\.bin"):
        remote.run_async(Data(str(dataset)), Data(str(dataset)))
    store = kinetic_backend.store()
    assert store.list("jobs/") == [] and store.list("data/") == []
    settings = resolve_settings(backend=kinetic_backend.name, quiet=True)
    assert get_backend(kinetic_backend.name, settings.backend_settings()).list_job_ids() == []


def test_a_batch_gives_each_input_its_own_data(
    kinetic_backend: ScenarioBackend, dataset: Path, tmp_path: Path
) -> None:
    other = tmp_path / "other"
    other.mkdir()
    (other / "train.csv").write_text("other")
    shared = Data(str(dataset))
    remote = kinetic_backend.decorate()(uf.read_paths)
    batch = remote.run_async_map([shared, Data(str(other)), shared], max_concurrent=3)
    trees = [next(iter(result.values())) for result in batch.results()]
    assert [tree["train.csv"] for tree in trees] == ["x,y\n1,2\n", "other", "x,y\n1,2\n"]
    if not capabilities(kinetic_backend).local_data:
        assert len(uploaded_hashes(kinetic_backend)) == 2, "each distinct data uploaded once"


def test_local_data_inside_the_project_is_left_out_of_the_code_bundle(
    local_backend: ScenarioBackend, tmp_path: Path
) -> None:
    project = tmp_path / "proj"
    (project / "data").mkdir(parents=True)
    (project / "data" / "big.bin").write_bytes(b"0" * 1000)
    (project / "requirements.txt").write_text("")
    done = run_script(
        """
        import kinetic

        @kinetic.run(accelerator="cpu", backend="local")
        def size(path):
            import os
            return sum(os.path.getsize(os.path.join(path, n)) for n in os.listdir(path))

        job = size.run_async(kinetic.Data("./data"))
        print("RESULT", job.result(cleanup=False), job.job_id)
        """,
        project,
    )
    _, value, job_id = next(
        line for line in done.stdout.splitlines() if line.startswith("RESULT")
    ).split()
    assert value == "1000"
    store = local_backend.store()
    call = read_call(store, job_id)
    assert call.bundle is not None
    with zipfile.ZipFile(io.BytesIO(store.read(call.bundle.key))) as bundle:
        names = bundle.namelist()
    assert "script.py" in names and not any(name.startswith("data/") for name in names)
