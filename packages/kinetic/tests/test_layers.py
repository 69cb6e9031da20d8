"""Inside ``kinetic``, imports point down the layers, with no exception: the command line above
the batch engine, above the job handle, above a batch's bookkeeping, above settings and the
session. No import loop holds more than two modules, and none crosses sub-packages. And the
client names no backend package: it reaches them through entry points (``kinetic.backends``
and, for the command line, ``kinetic.cli``).

Every import statement is parsed (imports inside functions and under ``TYPE_CHECKING`` too),
so a lazy upward import is caught like any other (:mod:`kinetic_testing.import_graph`, which
also draws the floors in ``docs/architecture.md``). ``tests/test_dependency_direction.py``
checks the direction between the distributions; this checks it within the client."""

from pathlib import Path

import pytest

from kinetic_testing.import_graph import imports, loops, module_edges, unit, unit_edges

SOURCE = Path(__file__).resolve().parents[1] / "src" / "kinetic"

LAYERS: tuple[tuple[str, str], ...] = (
    ("__main__", "python -m kinetic"),
    ("cli", "the command line's shell, on the public API"),
    ("__init__", "the public namespace"),
    ("decorator", "kinetic.run: submission and the batch engine, composed"),
    ("batch", "the batch engine: a batch is made of jobs"),
    ("submission jobs _debug_call", "making a job, finding jobs, a blocking debug call"),
    ("handle", "one job: observe, collect, clean up"),
    (
        "debug display failure outcome kept_output outputs usage",
        "what a job's handle reads and shows",
    ),
    ("bookkeeping", "a batch's stored records, under both the handle and the batch engine"),
    (
        "options env_capture packaging data local trust handle_record job_ids",
        "a call's options, code and data; the local backend's client side; verifying records",
    ),
    (
        "config settings backends _context session _version _log _log_copier _interrupted"
        " _waiting _relay _results _seconds job_status",
        "settings, backends and stores built once a session, logging, waiting",
    ),
)
"""Units (a top-level module, or a subpackage as a whole), top layer first, each with what it
holds. A unit may import units of its own layer (without a loop) and of those below it."""


def _layer_of(name: str) -> int:
    for index, (units, _) in enumerate(LAYERS):
        if name in units.split():
            return index
    raise AssertionError(f"{name!r} is in no layer: add it to LAYERS in {__file__}")


def _upward(root: Path) -> list[str]:
    bad = []
    for found in imports(root):
        if found.imported != root.name and not found.imported.startswith(root.name + "."):
            continue
        src, dst = unit(found.importer), unit(found.imported)
        if src != dst and _layer_of(dst) < _layer_of(src):
            where = f"{found.importer}:{found.line}"
            bad.append(f"{where} imports {found.imported} ({src} is below {dst})")
    return bad


def _loop_problems(root: Path) -> list[str]:
    """Loops between units, loops of more than two modules, and two-module loops whose
    modules live in different packages; imports under ``TYPE_CHECKING`` count."""
    problems = [f"units import each other: {' -> '.join(c)}" for c in loops(unit_edges(root))]
    for members in loops(module_edges(root, type_checking=True)):
        packages = {name.rpartition(".")[0] for name in members}
        if len(members) > 2 or len(packages) > 1:
            problems.append(f"modules import each other: {', '.join(members)}")
    return problems


def test_imports_point_down_the_layers() -> None:
    assert _upward(SOURCE) == []


def test_no_import_loop_holds_more_than_two_modules_of_one_package() -> None:
    assert _loop_problems(SOURCE) == []


def test_every_unit_is_in_a_layer_and_every_layer_holds_one() -> None:
    units = set(unit_edges(SOURCE))
    declared = [name for names, _ in LAYERS for name in names.split()]
    assert sorted(declared) == sorted(set(declared)), "a unit is in two layers"
    assert set(declared) == units


def test_the_library_never_imports_the_command_line() -> None:
    below_cli = [
        f"{found.importer}:{found.line}"
        for found in imports(SOURCE)
        if found.imported.startswith("kinetic.")
        and unit(found.imported) == "cli"
        and unit(found.importer) not in ("cli", "__main__")
    ]
    assert below_cli == []


def test_the_client_names_no_backend_package() -> None:
    """Backends are reached through entry points; their names appear nowhere in the client
    (not in an import, not in a string handed to importlib)."""
    named = [
        f"{path.relative_to(SOURCE)}:{number}"
        for path in sorted(SOURCE.rglob("*.py"))
        for number, text in enumerate(path.read_text().splitlines(), 1)
        if "kinetic_gke" in text or "kinetic_pathways" in text
    ]
    assert named == []


def _package(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "kinetic"
    for name, text in {"__init__.py": "", "settings.py": "", **files}.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


@pytest.mark.parametrize(
    ("files", "upward"),
    [
        ({"settings.py": "def f():\n    from kinetic.batch import x\n"}, True),
        ({"batch/__init__.py": "", "batch/a.py": "from ..cli import main\n"}, True),
        ({"batch/__init__.py": "", "batch/a.py": "from kinetic import settings"}, False),
        ({"cli/__init__.py": "", "cli/a.py": "import kinetic.batch.handle\n"}, False),
        (
            {
                "handle.py": "from typing import TYPE_CHECKING\n"
                "if TYPE_CHECKING:\n    from kinetic.batch import BatchHandle\n"
            },
            True,
        ),
    ],
)
def test_the_check_sees_upward_imports_even_lazy_relative_or_for_types(
    tmp_path: Path, files: dict[str, str], upward: bool
) -> None:
    assert bool(_upward(_package(tmp_path, files))) is upward


@pytest.mark.parametrize(
    ("files", "loop"),
    [
        # Two modules of one package may import each other (a lazy import for a view).
        (
            {
                "batch/__init__.py": "",
                "batch/a.py": "import kinetic.batch.b\n",
                "batch/b.py": "import kinetic.batch.a\n",
            },
            False,
        ),
        # Three may not, even when one of the imports is only for types.
        (
            {
                "batch/__init__.py": "",
                "batch/a.py": "import kinetic.batch.b\n",
                "batch/b.py": "import kinetic.batch.c\n",
                "batch/c.py": "from typing import TYPE_CHECKING\n"
                "if TYPE_CHECKING:\n    import kinetic.batch.a\n",
            },
            True,
        ),
        # Nor two of different packages.
        (
            {
                "batch/__init__.py": "",
                "batch/a.py": "from kinetic import handle\n",
                "handle.py": "import kinetic.batch.a\n",
            },
            True,
        ),
    ],
)
def test_the_check_sees_loops(tmp_path: Path, files: dict[str, str], loop: bool) -> None:
    assert bool(_loop_problems(_package(tmp_path, files))) is loop
