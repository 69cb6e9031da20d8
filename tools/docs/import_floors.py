"""Draw the floors of the client's imports, from the code, for ``docs/architecture.md``.

A unit (a top-level module of ``kinetic``, or a sub-package as a whole) sits one floor above
the highest unit it imports; every import, lazy or for types only, counts
(:mod:`kinetic_testing.import_graph`, which the layers test reads too). So each arrow of the
drawing points down, and a loop between units, which has no floor, stops the script.

    python tools/docs/import_floors.py          # print the drawing
    python tools/docs/import_floors.py --write  # put it in docs/architecture.md
    python tools/docs/import_floors.py --check  # exit 1 if the page shows another

``tests/docs/test_architecture.py`` runs ``--check``.
"""

import argparse
import sys
import textwrap
from pathlib import Path

from kinetic_testing.import_graph import floors, loops, unit_edges

ROOT = Path(__file__).resolve().parents[2]
CLIENT = ROOT / "packages" / "kinetic" / "src" / "kinetic"
PAGE = ROOT / "docs" / "architecture.md"
BEGIN = "<!-- import floors: tools/docs/import_floors.py writes this block -->"
END = "<!-- /import floors -->"
WIDTH = 96


def drawing(root: Path = CLIENT) -> str:
    """Each floor from the top, each unit on it with the units it imports, highest first."""
    edges = unit_edges(root, type_checking=True)
    circles = loops(edges)
    if circles:
        raise SystemExit(f"units of {root} import each other, so they have no floor: {circles}")
    floor = floors(edges)
    name_width = max(len(name) for name in edges)
    lines = []
    for level in sorted(set(floor.values()), reverse=True):
        for name in sorted(unit for unit in edges if floor[unit] == level):
            imported = sorted(edges[name], key=lambda target: (-floor[target], target))
            assert all(floor[target] < level for target in imported), (name, imported)
            head = f"{level:>2}  {name:<{name_width}}"
            if not imported:
                lines.append(head.rstrip())
                continue
            arrow = f"{head}  -> "
            lines += textwrap.wrap(
                " ".join(imported),
                WIDTH,
                initial_indent=arrow,
                subsequent_indent=" " * len(arrow),
                break_on_hyphens=False,
            )
    return "\n".join(lines) + "\n"


def page_block(page: Path = PAGE) -> str:
    """The drawing as the page shows it (inside its fenced block, between the markers)."""
    text = page.read_text()
    start, end = text.index(BEGIN) + len(BEGIN), text.index(END)
    block = text[start:end].strip("\n")
    return block.removeprefix("```text\n").removesuffix("```") if block else ""


def write(page: Path = PAGE) -> None:
    text = page.read_text()
    start, end = text.index(BEGIN) + len(BEGIN), text.index(END)
    page.write_text(f"{text[:start]}\n```text\n{drawing()}```\n{text[end:]}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--write", action="store_true", help=f"update {PAGE.relative_to(ROOT)}")
    parser.add_argument("--check", action="store_true", help="exit 1 if the page is out of date")
    options = parser.parse_args(argv)
    if options.write:
        write()
    elif options.check:
        if page_block() != drawing():
            sys.stderr.write(
                f"{PAGE.relative_to(ROOT)} shows another drawing of the client's imports than "
                f"the code has; run: python {Path(__file__).relative_to(ROOT)} --write\n"
            )
            return 1
    else:
        sys.stdout.write(drawing())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
