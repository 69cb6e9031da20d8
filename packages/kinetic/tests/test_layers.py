"""Inside ``kinetic``, imports point down the layers: the command line above the batch engine,
above the handles, above submission, above data and packaging, above settings. And the client
names no backend package: it reaches them through entry points (``kinetic.backends`` and, for
the command line, ``kinetic.cli``).

Every import statement is parsed (imports inside functions too), so a lazy upward import is
caught like any other. ``tests/test_dependency_direction.py`` checks the direction between the
distributions; this checks it within the client."""

import ast
from pathlib import Path

import pytest

SOURCE = Path(__file__).resolve().parents[1] / "src" / "kinetic"

LAYERS: tuple[frozenset[str], ...] = tuple(
    frozenset(units.split())
    for units in (
        "__main__",  # python -m kinetic
        "cli",  # the command line's shell, on the public API
        "__init__",  # the public namespace
        "decorator",  # composes submission and the batch engine into kinetic.run
        "batch display",  # the batch engine and the views of batches and jobs
        "handle jobs debug _debug_call outputs _results _waiting trust failure kept_output"
        " bookkeeping",
        "submission options env_capture",  # turning a call into stored records and a submit
        "data packaging local",  # data, code bundles, the local backend's client side
        "config settings backends session _context _log _log_copier _interrupted job_status _relay"
        " _seconds",
    )
)
"""Units (a top-level module, or a subpackage as a whole), top layer first. A unit may import
its own layer and those below it."""

KNOWN_LOOPS = {
    ("submission", "handle"): "submission returns the JobHandle it made",
    ("submission", "__init__"): "a record carries kinetic.__version__",
    ("handle", "display"): "a handle's notebook view",
}
"""Upward imports that exist today, each named so that it is removed here when its loop is
opened (issue 26 lists them); no other may be added."""


def _layer_of(unit: str) -> int:
    for index, units in enumerate(LAYERS):
        if unit in units:
            return index
    raise AssertionError(f"{unit!r} is in no layer: add it to LAYERS in {__file__}")


def _unit(module: str) -> str:
    """``kinetic.batch.handle`` -> ``batch``; ``kinetic.handle`` -> ``handle``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(root: Path) -> list[tuple[str, str, int]]:
    """``(importing module, imported module, line)`` for every import of ``root``'s files;
    ``from kinetic import x`` counts as importing ``kinetic.x`` when that is a unit, else the
    package's namespace itself."""
    found: list[tuple[str, str, int]] = []
    for path in sorted(root.rglob("*.py")):
        module = _module_name(path, root)
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                found += [(module, alias.name, node.lineno) for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*anchor, *([node.module] if node.module else [])])
                if base == root.name:
                    for alias in node.names:
                        target = f"{base}.{alias.name}"
                        exists = (root / alias.name).is_dir() or (
                            root / f"{alias.name}.py"
                        ).exists()
                        found.append((module, target if exists else base, node.lineno))
                else:
                    found.append((module, base, node.lineno))
    return found


def _upward(root: Path) -> list[str]:
    bad = []
    for importer, imported, line in _imports(root):
        if imported != root.name and not imported.startswith(root.name + "."):
            continue
        src, dst = _unit(importer), _unit(imported)
        if src == dst or (src, dst) in KNOWN_LOOPS:
            continue
        if _layer_of(dst) < _layer_of(src):
            bad.append(f"{importer}:{line} imports {imported} ({src} is below {dst})")
    return bad


def test_imports_point_down_the_layers() -> None:
    assert _upward(SOURCE) == []


def test_every_known_loop_still_exists() -> None:
    """A loop that was opened must leave KNOWN_LOOPS, so it cannot come back unnoticed."""
    edges = {(_unit(a), _unit(b)) for a, b, _ in _imports(SOURCE) if b.startswith("kinetic")}
    assert set(KNOWN_LOOPS) - edges == set()


def test_the_library_never_imports_the_command_line() -> None:
    below_cli = [
        f"{importer}:{line}"
        for importer, imported, line in _imports(SOURCE)
        if _unit(imported) == "cli" and imported.startswith("kinetic.")
        and _unit(importer) not in ("cli", "__main__")
    ]  # fmt: skip
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


@pytest.mark.parametrize(
    ("files", "upward"),
    [
        ({"settings.py": "def f():\n    from kinetic.batch import x\n"}, True),
        ({"batch/__init__.py": "", "batch/a.py": "from ..cli import main\n"}, True),
        (
            {
                "settings.py": "",
                "batch/__init__.py": "",
                "batch/a.py": "from kinetic import settings",
            },
            False,
        ),
        ({"cli/__init__.py": "", "cli/a.py": "import kinetic.batch.handle\n"}, False),
    ],
)
def test_the_check_sees_upward_imports_even_lazy_or_relative(
    tmp_path: Path, files: dict[str, str], upward: bool
) -> None:
    root = tmp_path / "kinetic"
    for name, text in {"__init__.py": "", **files}.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    assert bool(_upward(root)) is upward
