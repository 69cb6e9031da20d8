"""The import graph of a Python package, read from its source: what the layers test enforces
and what the architecture page draws.

Every import statement is parsed (inside functions too, so a lazy import counts like any
other); ``from kinetic.batch import handle`` counts as importing ``kinetic.batch.handle`` when
that is a module, else the package itself. A *unit* is a top-level module or a sub-package as a
whole (``kinetic.batch.handle`` belongs to ``batch``); a *floor* is a unit's height in the
units' graph: 0 for a unit that imports no other, else one more than the highest it imports.
"""

import ast
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "Import",
    "floors",
    "imports",
    "loops",
    "module_lengths",
    "module_name",
    "unit",
    "unit_edges",
]


@dataclass(frozen=True)
class Import:
    importer: str
    imported: str
    line: int
    type_checking: bool
    """Under ``if TYPE_CHECKING:``: read by type checkers only, never at run time."""


def module_name(path: Path, root: Path) -> str:
    """``root/batch/handle.py`` -> ``kinetic.batch.handle`` (``root`` is the ``kinetic`` folder)."""
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def unit(module: str) -> str:
    """``kinetic.batch.handle`` -> ``batch``; ``kinetic.handle`` -> ``handle``; ``kinetic`` ->
    ``__init__``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _is_module(root: Path, dotted: str) -> bool:
    relative = Path(*dotted.split(".")[1:]) if "." in dotted else Path()
    folder = root / relative
    return folder.with_suffix(".py").is_file() or (folder / "__init__.py").is_file()


def _type_checking_lines(tree: ast.AST) -> set[int]:
    """The lines of every statement under ``if TYPE_CHECKING:``."""
    lines: set[int] = set()
    for node in ast.walk(tree):
        test = getattr(node, "test", None)
        if isinstance(node, ast.If) and (
            (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING")
            or (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")
        ):
            for child in node.body:
                lines.update(range(child.lineno, (child.end_lineno or child.lineno) + 1))
    return lines


def imports(root: Path) -> list[Import]:
    """Every import of a module of ``root``'s package (``root`` is its folder), internal or
    not, in file order."""
    found: list[Import] = []
    for path in sorted(root.rglob("*.py")):
        module = module_name(path, root)
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        tree = ast.parse(path.read_text(), str(path))
        guarded = _type_checking_lines(tree)
        for node in ast.walk(tree):
            hidden = getattr(node, "lineno", 0) in guarded
            if isinstance(node, ast.Import):
                found += [Import(module, alias.name, node.lineno, hidden) for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*anchor, *([node.module] if node.module else [])])
                inside = base == root.name or base.startswith(root.name + ".")
                for alias in node.names:
                    target = f"{base}.{alias.name}"
                    named = target if inside and _is_module(root, target) else base
                    found.append(Import(module, named, node.lineno, hidden))
    found.sort(key=lambda i: (i.importer, i.line))
    return found


def _internal(root: Path, found: Iterable[Import], *, type_checking: bool) -> list[Import]:
    return [
        i
        for i in found
        if (i.imported == root.name or i.imported.startswith(root.name + "."))
        and (type_checking or not i.type_checking)
    ]


def module_edges(root: Path, *, type_checking: bool = False) -> dict[str, set[str]]:
    """Module -> the package's modules it imports (itself excluded)."""
    edges: dict[str, set[str]] = {
        module_name(path, root): set() for path in sorted(root.rglob("*.py"))
    }
    for i in _internal(root, imports(root), type_checking=type_checking):
        if i.imported != i.importer:
            edges[i.importer].add(i.imported)
    return edges


def unit_edges(root: Path, *, type_checking: bool = False) -> dict[str, set[str]]:
    """Unit -> the other units it imports."""
    edges: dict[str, set[str]] = {}
    for importer, imported in module_edges(root, type_checking=type_checking).items():
        targets = edges.setdefault(unit(importer), set())
        targets.update(unit(name) for name in imported if unit(name) != unit(importer))
    return edges


def loops(edges: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """The graph's strongly connected components of more than one node, each sorted, largest
    first: every import loop (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(edges.get(start, ()))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return sorted(found, key=lambda c: (-len(c), c))


def floors(edges: Mapping[str, Iterable[str]]) -> dict[str, int]:
    """Each node's floor: 0 when it imports nothing, else one above the highest it imports.
    Nodes of one loop share a floor (the loop counts as one node)."""
    component = {node: node for node in edges}
    for members in loops(edges):
        for member in members:
            component[member] = members[0]
    heights: dict[str, int] = {}

    def height(node: str, seen: frozenset[str]) -> int:
        key = component[node]
        if key in heights:
            return heights[key]
        below = [
            height(target, seen | {key})
            for member, targets in edges.items()
            if component[member] == key
            for target in targets
            if component.get(target, target) != key and component.get(target) not in seen
        ]
        heights[key] = 1 + max(below) if below else 0
        return heights[key]

    return {node: height(node, frozenset()) for node in edges}


def module_lengths(root: Path) -> dict[str, int]:
    """Lines of each module of ``root``'s package."""
    return {
        module_name(path, root): len(path.read_text().splitlines())
        for path in sorted(root.rglob("*.py"))
    }
