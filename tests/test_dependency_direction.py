"""Dependencies point one way: kinetic -> backends -> protocol, and runtime -> protocol.

Two independent checks:

* at run time, each package is imported in a fresh interpreter and ``sys.modules`` is
  inspected, which catches what an import really drags in (including via third parties);
* statically, every ``import`` statement in every source file is parsed, which also catches
  imports hidden inside functions that only run later.
"""

import ast
import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ROOT / "packages"
STDLIB = frozenset(sys.stdlib_module_names) | {"__future__"}

# --- run time: what importing a package loads -----------------------------------------------

_PROBE = """
import importlib, json, pkgutil, sys
name, walk = sys.argv[1], sys.argv[2] == "walk"
before = set(sys.modules)
package = importlib.import_module(name)
if walk:
    for info in pkgutil.walk_packages(package.__path__, name + "."):
        if not info.name.endswith("__main__"):
            importlib.import_module(info.name)
print(json.dumps(sorted(set(sys.modules) - before)))
"""


def _loaded_by_import(package: str, *, walk: bool) -> list[str]:
    """Modules newly in ``sys.modules`` after importing ``package`` (and, if ``walk``, all of
    its submodules) in a clean interpreter."""
    result = subprocess.run(
        [sys.executable, "-I", "-c", _PROBE, package, "walk" if walk else "one"],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
    )
    assert result.returncode == 0, f"importing {package} failed:\n{result.stderr[-3000:]}"
    loaded: list[str] = json.loads(result.stdout.strip().splitlines()[-1])
    return loaded


def _matching(modules: list[str], forbidden: tuple[str, ...]) -> list[str]:
    return sorted(m for m in modules if any(m == f or m.startswith(f + ".") for f in forbidden))


def test_protocol_loads_only_msgspec_and_the_standard_library() -> None:
    loaded = _loaded_by_import("kinetic_protocol", walk=True)
    # Whatever msgspec itself pulls in (e.g. typing_extensions, when installed) is its business.
    allowed = STDLIB | {"kinetic_protocol"} | {m.split(".")[0] for m in _msgspec_modules()}
    foreign = sorted(m for m in loaded if m.split(".")[0] not in allowed)
    assert foreign == []


def _msgspec_modules() -> list[str]:
    return [*_loaded_by_import("msgspec", walk=False), "msgspec"]


RUNTIME_FORBIDDEN = (
    "click",
    "kubernetes",
    "structlog",
    "google.cloud.devtools",  # Cloud Build
    "google.cloud.storage",  # only once a gs:// store or gs:// data is used
    "datasets",  # only once hf:// data is staged
    "kinetic",
    "kinetic_gke",
    "kinetic_pathways",
)


def test_runtime_loads_no_client_backend_or_cloud_modules() -> None:
    loaded = _loaded_by_import("kinetic_runtime", walk=True)
    assert _matching(loaded, RUNTIME_FORBIDDEN) == []


def test_local_job_processes_never_load_the_client_package() -> None:
    """``kinetic_runtime.local`` (supervisor, launcher) is what every local job runs in: a
    forked job must carry the runtime in memory, never the client."""
    loaded = _loaded_by_import("kinetic_runtime.local", walk=True)
    assert _matching(loaded, RUNTIME_FORBIDDEN) == []


def test_the_local_supervisor_loads_only_the_standard_library() -> None:
    """One supervisor starts per local job (without a launcher, as a fresh interpreter)."""
    loaded = _loaded_by_import("kinetic_runtime.local.supervisor", walk=False)
    own = {
        "kinetic_runtime",
        "kinetic_runtime.local",
        "kinetic_runtime.local.gpus",  # standard library only, too
        "kinetic_runtime.local.hosts",  # standard library and the modules here only
        "kinetic_runtime.local.processes",
        "kinetic_runtime.local.slot_queue",  # standard library and private_files only
        "kinetic_runtime.local.claim",  # the same
        "kinetic_runtime.local.dispatch",  # the same, and the two above
        "kinetic_runtime.local.supervisor",
        "kinetic_runtime.private_files",  # standard library only, too
        "kinetic_runtime.bundle_trees",  # standard library at import, too
        "kinetic_runtime.disk_full",  # standard library and the two below only
        "kinetic_runtime.local.state_file",  # the same
        "kinetic_protocol",  # its names load lazily: standard library only at import
        "kinetic_protocol.errors",  # standard library only
        "kinetic_protocol.exits",  # nothing at all
    }
    assert sorted(m for m in loaded if m.split(".")[0] not in STDLIB and m not in own) == []


@pytest.mark.parametrize("package", ["kinetic_gke", "kinetic_pathways"])
def test_backends_never_load_the_client_package(package: str) -> None:
    loaded = _loaded_by_import(package, walk=True)
    assert _matching(loaded, ("kinetic",)) == []


def test_importing_kinetic_loads_no_kubernetes_google_cloud_or_click() -> None:
    loaded = _loaded_by_import("kinetic", walk=False)
    assert _matching(loaded, ("kubernetes", "google.cloud", "click")) == []


# --- static: every import statement in the source trees -------------------------------------


@dataclass(frozen=True)
class Import:
    """One imported name, fully dotted (``from a import b`` gives ``a.b``)."""

    module: str
    file: Path
    line: int

    def __str__(self) -> str:
        return f"{self.file.relative_to(ROOT)}:{self.line}: {self.module}"


def _imports(package_dir: Path) -> list[Import]:
    found: list[Import] = []
    for file in sorted(package_dir.rglob("*.py")):
        tree = ast.parse(file.read_text(encoding="utf-8"), filename=str(file))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                found += [Import(alias.name, file, node.lineno) for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                found += [
                    Import(f"{node.module}.{alias.name}", file, node.lineno) for alias in node.names
                ]
    return found


def _source(distribution: str, package: str) -> Path:
    path = PACKAGES / distribution / "src" / package
    assert path.is_dir(), f"missing source tree {path}"
    return path


def _under(module: str, *prefixes: str) -> bool:
    return any(module == p or module.startswith(p + ".") for p in prefixes)


def test_protocol_source_imports_only_msgspec_and_the_standard_library() -> None:
    bad = [
        str(i)
        for i in _imports(_source("kinetic-protocol", "kinetic_protocol"))
        if i.module.split(".")[0] not in STDLIB
        and not _under(i.module, "kinetic_protocol", "msgspec")
    ]
    assert bad == []


GCS_CLIENT_MODULES = ("google.cloud.storage", "google.api_core", "google.auth", "requests")
"""The GCS client and the HTTP transport it is built on (the store tunes its session)."""


def test_runtime_source_imports_only_protocol_cloudpickle_and_gcs_in_its_store() -> None:
    """Third-party modules only where they are used: the GCS client in the store and the bulk
    transfers, ``datasets`` in hf:// staging (each imported inside the functions that need
    them, which ``test_runtime_loads_no_client_backend_or_cloud_modules`` checks)."""
    source = _source("kinetic-runtime", "kinetic_runtime")
    gcs_users = {
        source / "stores" / "gcs.py",
        source / "data" / "transfer.py",
        source / "data" / "stage.py",
    }
    multihost = source / "multihost.py"
    jax_cluster = source / "jax_cluster.py"
    bad = []
    for i in _imports(source):
        if i.module.split(".")[0] in STDLIB:
            continue
        if _under(i.module, "kinetic_runtime", "kinetic_protocol", "cloudpickle"):
            continue
        if i.file in gcs_users and _under(i.module, *GCS_CLIENT_MODULES):
            continue
        if i.file == source / "data" / "hf.py" and i.module == "datasets":
            continue
        if i.file == multihost and i.module == "jax":
            continue  # imported only once the user's own code has imported JAX
        if i.file == jax_cluster and _under(i.module, "jax"):
            continue  # likewise: the cluster is defined when the job's import of JAX has run
        bad.append(str(i))
    assert bad == []


def test_runtime_local_source_imports_only_the_runtime_protocol_and_standard_library() -> None:
    source = _source("kinetic-runtime", "kinetic_runtime") / "local"
    bad = [
        str(i)
        for i in _imports(source)
        if i.module.split(".")[0] not in STDLIB
        and not _under(i.module, "kinetic_runtime", "kinetic_protocol")
    ]
    assert bad == []


@pytest.mark.parametrize(
    ("distribution", "package"),
    [("kinetic-gke", "kinetic_gke"), ("kinetic-pathways", "kinetic_pathways")],
)
def test_backend_source_never_imports_the_client_package(distribution: str, package: str) -> None:
    bad = [str(i) for i in _imports(_source(distribution, package)) if _under(i.module, "kinetic")]
    assert bad == []


def test_static_scan_sees_imports_inside_functions(tmp_path: Path) -> None:
    """The scanner itself: a lazy ``from x import y`` inside a function is reported."""
    (tmp_path / "mod.py").write_text(
        "import os\n\ndef later():\n    from kinetic.cli import main\n    return main\n"
    )
    modules = [i.module for i in _imports(tmp_path)]
    assert modules == ["os", "kinetic.cli.main"]


@pytest.mark.parametrize("distribution", ["kinetic-gke", "kinetic-pathways"])
def test_backend_tests_never_import_the_client_package(distribution: str) -> None:
    """A backend's tests use only that backend and its dependencies (kinetic_protocol,
    kinetic_testing); tests that go through the client live in tests/scenarios."""
    tests = PACKAGES / distribution / "tests"
    bad = [str(i) for i in _imports(tests) if _under(i.module, "kinetic")]
    assert bad == []
