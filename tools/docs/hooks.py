"""MkDocs hooks: pages generated from the code, so they cannot drift from it.

``<!-- kinetic:settings -->`` in a page becomes the table of every declared setting (the
registry ``kinetic config show`` reads): client, runtime and every installed backend.

A ```python block whose first line is ``# not run: <why>`` is one the documentation tests do
not run (it needs a cloud project); that line is for the tests and the page's authors, so the
built page shows the block without it.
"""

import re
from typing import Any

SETTINGS_MARKER = "<!-- kinetic:settings -->"
NOT_RUN_LINE = re.compile(r"^(```python[^\n]*\n)# not run:[^\n]*\n", re.MULTILINE)
"""The test marker (``tests/docs/docs_support.py``'s ``NOT_RUN``) as a block's first line."""


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def settings_markdown() -> str:
    from kinetic.settings import registry

    sections: dict[tuple[str, str], list[str]] = {}
    for spec in registry():
        default = f"`{spec.default}`" if spec.default else ""
        profile = f"`{spec.profile_key}`" if spec.profile_key else ""
        choices = f" One of: {', '.join(f'`{c}`' for c in spec.choices)}." if spec.choices else ""
        row = f"| `{spec.env}` | {default} | {profile} | {_cell(spec.help)}{choices} |"
        sections.setdefault((spec.owner, spec.kind), []).append(row)
    parts = []
    for (owner, kind), rows in sorted(sections.items()):
        title = f"{owner}: set inside a running job" if kind == "job" else owner
        parts += [
            f"### {title}",
            "",
            "| variable | default | profile key | what it does |",
            "|---|---|---|---|",
            *rows,
            "",
        ]
    return "\n".join(parts)


def on_page_markdown(markdown: str, **kwargs: Any) -> str:
    if SETTINGS_MARKER in markdown:
        markdown = markdown.replace(SETTINGS_MARKER, settings_markdown())
    return NOT_RUN_LINE.sub(r"\1", markdown)
