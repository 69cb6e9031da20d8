"""The suite's processes load bytecode instead of compiling source.

The suite starts thousands of interpreters (local jobs and their supervisors, pods, scripts
attaching from another process). With ``PYTHONDONTWRITEBYTECODE`` set, none of them writes a
``.pyc``, so without precompiled bytecode each one compiled every module it imported: about
0.9 s of CPU for ``google.cloud.storage`` in each pod that reads a ``gs://`` store, 1.3 s for
``kubernetes`` in each process that starts a Kubernetes job.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

from kinetic_testing.bytecode import SOURCE_DIRS, shares

ROOT = Path(__file__).resolve().parents[3]

# Counts every module compiled from a .py file while importing what the suite's processes
# import: a job's runtime, a pod's GCS store, the client and its Kubernetes backends.
_PROBE = """
import json, sys
compiled = []
def hook(event, args):
    if event == "compile" and isinstance(args[1], str) and args[1].endswith(".py"):
        compiled.append(args[1])
sys.addaudithook(hook)
import kinetic_runtime.main, kinetic_runtime.stores.gcs, google.cloud.storage
import kinetic, kinetic.cli, kinetic_gke, kinetic_pathways, kubernetes, cloudpickle, msgspec
print(json.dumps(compiled))
"""


def test_a_fresh_interpreter_that_writes_no_bytecode_compiles_nothing_it_imports() -> None:
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    done = subprocess.run(
        [sys.executable, "-c", _PROBE], env=env, cwd=ROOT, capture_output=True, text=True,
        check=True, timeout=120,
    )  # fmt: skip
    compiled = json.loads(done.stdout.strip().splitlines()[-1])
    assert compiled == [], (
        f"{len(compiled)} modules compiled from source, e.g. {compiled[:5]}: site-packages "
        "and the workspace are compiled by the test plugin (kinetic_testing.bytecode)"
    )


def test_test_modules_keep_their_rewritten_bytecode_where_none_is_written(tmp_path: Path) -> None:
    (tmp_path / "test_probe.py").write_text("def test_probe():\n    assert 1 + 1 == 2\n")
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    command = [sys.executable, "-m", "pytest", "-q", "-p", "kinetic_testing.pytest_plugin"]
    subprocess.run(
        [*command, "-p", "no:cacheprovider", str(tmp_path)], cwd=tmp_path, env=env,
        capture_output=True, check=True, timeout=120,
    )  # fmt: skip
    assert list((tmp_path / "__pycache__").glob("test_probe.*-pytest-*.pyc"))


def test_the_precompiled_directories_are_the_workspace_packages() -> None:
    sources = {str(path.relative_to(ROOT)) for path in ROOT.glob("packages/*/src")}
    sources.add("tools/kinetic-testing/src")
    assert set(SOURCE_DIRS) == sources


def test_the_compile_processes_get_packages_of_about_as_many_files_each(tmp_path: Path) -> None:
    sizes = {"big": 6, "middle": 3, "other": 3}
    for name, count in sizes.items():
        for index in range(count):
            (tmp_path / name / "sub").mkdir(parents=True, exist_ok=True)
            (tmp_path / name / "sub" / f"m{index}.py").write_text("")
    (tmp_path / "single.py").write_text("")
    entries = [tmp_path / name for name in sizes] + [tmp_path / "single.py"]

    split = shares(entries, 2)

    assert sorted(entry for share in split for entry in share) == sorted(entries)
    loads = sorted(sum(sizes.get(entry.name, 1) for entry in share) for share in split)
    assert loads == [6, 7]
