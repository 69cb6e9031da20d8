"""Unchanged code is not uploaded again, even by a new process (which has no memory of uploads).

The first submission runs in the test process; the second in a fresh interpreter, which
records every ``bundles/`` write it makes by wrapping ``write`` on the class of the store the
backend uses. The stored bundle object itself must be untouched: same listing, same object
(file inode and modification time, or GCS generation).
"""

import json
import shutil
import sys
from pathlib import Path
from typing import Any

import batch_userfuncs as uf
from scenario_support import ScenarioBackend, client_only, run_script

from kinetic_protocol import ObjectStore
from kinetic_runtime.stores import LocalStore

_MODULE = "bundle_reuse_funcs"

_SECOND_PROCESS = """
import importlib
import json
import sys

sys.path.insert(0, {root!r})
module_name, _, class_name = {store_class!r}.partition(":")
store_class = getattr(importlib.import_module(module_name), class_name)
bundle_writes = []
real_write = store_class.write


def recording_write(self, key, data, **options):
    if key.startswith("bundles/"):
        bundle_writes.append(key)
    real_write(self, key, data, **options)


store_class.write = recording_write

import kinetic
import {module} as funcs

step = kinetic.run(accelerator={accelerator!r}, backend={backend!r})(funcs.step)
single = step.run_async("single").result()
batch = step.run_async_map([{{"value": 0}}, {{"value": 1}}]).results()
print(json.dumps({{"results": [single, batch], "bundle_writes": bundle_writes}}))
"""


def _project(tmp_path: Path) -> Path:
    """A project of its own holding one module, so nothing edited elsewhere changes its bundle."""
    root = tmp_path / "project"
    root.mkdir()
    (root / "pyproject.toml").write_text('[project]\nname = "bundle-reuse"\nversion = "0"\n')
    shutil.copyfile(str(uf.__file__), root / f"{_MODULE}.py")
    return root


def _object_identity(store: ObjectStore, key: str) -> Any:
    """What changes whenever the object is written again, even with the same bytes."""
    if isinstance(store, LocalStore):  # a rewrite replaces the file (new inode, new mtime)
        stat = Path(store.url(key)).stat()
        return ("file", stat.st_ino, stat.st_mtime_ns)
    blob = store._get_client().bucket(store.bucket_name).get_blob(store._name(key))  # type: ignore[attr-defined]
    assert blob is not None, key
    return ("gcs", blob.generation, blob.time_created)


@client_only
def test_a_new_process_does_not_upload_unchanged_code_again(
    kinetic_backend: ScenarioBackend, tmp_path: Path
) -> None:
    root = _project(tmp_path)
    sys.path.insert(0, str(root))
    try:
        funcs = __import__(_MODULE)
        step = kinetic_backend.decorate()(funcs.step)
        assert step.run_async_map([{"value": "first"}]).results() == ["first"]
    finally:
        sys.path.remove(str(root))
        sys.modules.pop(_MODULE, None)
    store = kinetic_backend.store()
    [bundle_key] = store.list("bundles/")
    before = _object_identity(store, bundle_key)

    store_class = type(store)
    script = _SECOND_PROCESS.format(
        root=str(root),
        store_class=f"{store_class.__module__}:{store_class.__qualname__}",
        module=_MODULE,
        backend=kinetic_backend.name,
        accelerator=kinetic_backend.accelerator,
    )
    done = run_script(script, tmp_path / "second-process", timeout=120)
    report = json.loads(done.stdout.strip().splitlines()[-1])

    assert report["results"] == ["single", [0, 1]]
    assert report["bundle_writes"] == [], "the new process uploaded the unchanged bundle again"
    assert store.list("bundles/") == [bundle_key]
    assert _object_identity(store, bundle_key) == before, "the stored bundle was rewritten"
