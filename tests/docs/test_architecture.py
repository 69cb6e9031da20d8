"""``docs/architecture.md`` matches the code: its drawing of the client's imports is the one
``tools/docs/import_floors.py`` draws from the code now, and its sample backend keeps the
contract the conformance suite checks every installed backend against."""

import subprocess
import sys
from types import ModuleType

from docs_support import DOCS, ROOT, python_blocks

from kinetic_protocol.conformance import backend_problems

PAGE = DOCS / "architecture.md"


def test_the_drawing_of_the_clients_imports_is_drawn_from_the_code() -> None:
    checked = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "docs" / "import_floors.py"), "--check"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert checked.returncode == 0, checked.stderr


def test_the_sample_backend_keeps_the_contract() -> None:
    """The page's sample once declared ``signing_keys(self, *, create)``: a backend copied
    from it failed with a TypeError when the client passed ``refresh=``."""
    samples = []
    for number, block in enumerate(python_blocks(PAGE)):
        module = ModuleType(f"architecture_sample_{number}")
        exec(compile(block, f"{PAGE}:python block {number}", "exec"), module.__dict__)
        samples += [
            value
            for value in vars(module).values()
            if isinstance(value, type) and "capabilities" in vars(value)
        ]
    assert samples, "the page shows no backend"
    assert {sample.__name__: backend_problems(sample) for sample in samples} == {
        sample.__name__: [] for sample in samples
    }
