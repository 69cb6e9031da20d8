"""What a batch writes to the object store: the bundle once, each record once, nothing twice.

Every write the client makes is recorded by wrapping ``write`` on the class of the store the
backend under test uses; the jobs' own processes (which write only their result) are not wrapped.
"""

import importlib
import io
import shutil
import sys
import threading
import zipfile
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import batch_userfuncs as uf
import pytest
from batch_support import four_local_slots  # noqa: F401 (an autouse fixture)
from scenario_support import ScenarioBackend, client_only

import kinetic.batch
from kinetic.batch import stored_call
from kinetic_protocol import layout


@pytest.fixture
def written_keys(kinetic_backend: ScenarioBackend, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every key written in this process through a store of the kind the backend uses (its
    class, so every instance the client opens is covered), in order, repeats included."""
    store_class: Any = type(kinetic_backend.store())
    keys: list[str] = []
    lock = threading.Lock()
    real_write = store_class.write

    def recording_write(self: Any, key: str, data: bytes, **options: Any) -> None:
        with lock:
            keys.append(key)
        real_write(self, key, data, **options)

    monkeypatch.setattr(store_class, "write", recording_write)
    return keys


@pytest.fixture
def private_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ModuleType]:
    """``batch_userfuncs`` as the module of a project of its own under ``tmp_path``.

    The bundle is then made of this project alone, so files edited elsewhere in the
    repository while the test runs cannot change it between the two batches.
    """
    root = tmp_path / "project"
    root.mkdir()
    (root / "pyproject.toml").write_text('[project]\nname = "bundle-check"\nversion = "0"\n')
    shutil.copyfile(str(uf.__file__), root / "bundle_check_funcs.py")
    monkeypatch.syspath_prepend(str(root))
    try:
        yield importlib.import_module("bundle_check_funcs")
    finally:
        sys.modules.pop("bundle_check_funcs", None)


def _batch_keys(keys: list[str], group_id: str) -> list[str]:
    return [
        key
        for key in keys
        if key.startswith(layout.group_prefix(group_id)) or key == layout.manifest_key(group_id)
    ]


@client_only
def test_two_batches_of_unchanged_code_upload_one_bundle_and_write_each_record_once(
    kinetic_backend: ScenarioBackend,
    tmp_path: Path,
    private_project: ModuleType,
    written_keys: list[str],
) -> None:
    step = kinetic_backend.decorate()(private_project.step)
    first = step.run_async_map([{"value": 0}, {"value": 1}, {"value": 2}])
    assert first.results(cleanup=False) == [0, 1, 2]
    second = step.run_async_map(
        [{"value": "again", "fail_first": str(tmp_path / "failed-once")}, {"value": "once"}],
        retries=1,
    )
    assert second.results(cleanup=False) == ["again", "once"]

    store = kinetic_backend.store()
    [bundle_key] = store.list("bundles/")
    with zipfile.ZipFile(io.BytesIO(store.read(bundle_key))) as bundle:
        assert sorted(bundle.namelist()) == ["bundle_check_funcs.py", "pyproject.toml"]
    assert [key for key in written_keys if key.startswith("bundles/")] == store.list("bundles/"), (
        "the bundle is uploaded once for the first batch and not at all for the second"
    )

    for batch, attempts in (
        (first, [(0, 0), (1, 0), (2, 0)]),
        (second, [(0, 0), (0, 1), (1, 0)]),
    ):
        group = batch.group_id
        mine = _batch_keys(written_keys, group)
        # The lease is the submitter's heartbeat: rewriting it is its job.
        once = [key for key in mine if not key.startswith(layout.leases_prefix(group))]
        assert len(once) == len(set(once)), f"an object was written twice: {sorted(mine)}"
        manifest = mine.index(layout.manifest_key(group))
        assert set(mine[:manifest]) == {
            layout.group_function_key(group),
            layout.input_chunk_key(group, 0),
            layout.group_call_key(group),
            layout.lease_key(group, 0),
        }, "the function, the inputs, the call and the lease come before the manifest"
        children = [
            layout.parse_child_key(key)
            for key in mine
            if key.startswith(layout.children_prefix(group))
        ]
        assert sorted(children) == attempts, "one child record per submitted attempt"
        assert all(
            mine.index(layout.child_key(group, *attempt)) > manifest for attempt in attempts
        ), "children come after the manifest"

    job_keys = [key for key in written_keys if key.startswith("jobs/")]
    assert job_keys == [], "a batch child has no per-job artifacts of the client's"


def test_list_batches_lists_every_stored_batch(kinetic_backend: ScenarioBackend) -> None:
    square = kinetic_backend.decorate()(uf.square)
    first = square.run_async_map([1], name="one", tags={"k": "v"}, max_concurrent=None)
    second = square.run_async_map([2, 3], max_concurrent=None)
    listed = {
        summary.group_id: summary
        for summary in kinetic.batch.list_batches(backend=kinetic_backend.name)
    }
    assert set(listed) == {first.group_id, second.group_id}
    assert (listed[first.group_id].name, listed[first.group_id].tags) == ("one", {"k": "v"})
    assert [s.total_expected for s in (listed[first.group_id], listed[second.group_id])] == [1, 2]
    assert listed[second.group_id].func_name == "square"
    assert first.results() == [1]
    assert second.results() == [4, 9]


def test_a_batch_over_several_input_chunks_gives_every_input_its_own_value(
    local_backend: ScenarioBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Chunks of two inputs (10,000 in real use): the children at a chunk's edges read the
    right chunk. Only the submitter knows the chunk size; each child finds its chunk from
    the starts and counts its signed call lists, so the jobs' own processes need no patch."""
    monkeypatch.setattr(stored_call, "CHUNK_INPUTS", 2)
    square = local_backend.decorate()(uf.square)
    batch = square.run_async_map(list(range(5)))
    assert batch.results(timeout=60) == [0, 1, 4, 9, 16]
    group = batch.group_id
    assert local_backend.store().list(f"{layout.group_prefix(group)}inputs/") == [
        layout.input_chunk_key(group, start) for start in (0, 2, 4)
    ]
