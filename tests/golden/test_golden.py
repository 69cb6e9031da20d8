"""Every golden file still decodes, and today's encoding of the examples is byte-for-byte the
current version's golden file. Regenerate with ``uv run python tools/write_golden.py``."""

import importlib.util
import inspect
import re
import sys
from pathlib import Path
from types import ModuleType

import msgspec
import pytest

from kinetic_protocol import SCHEMA_VERSION, Failed, Succeeded, batch, records
from kinetic_protocol.records import decode_json, decode_result

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
VERSIONED_FILE = re.compile(r"^v(?P<version>\d+)\.(?P<format>json|msgpack)$")


def _load_tool() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "write_golden", ROOT / "tools" / "write_golden.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("write_golden", module)
    spec.loader.exec_module(module)
    return module


tool = _load_tool()
EXAMPLES: dict[str, msgspec.Struct] = tool.EXAMPLES
GOLDEN_FILES = sorted(p for p in HERE.glob("*/v*.*") if VERSIONED_FILE.match(p.name))


def _decode(path: Path, record_type: type[msgspec.Struct]) -> msgspec.Struct:
    data = path.read_bytes()
    if record_type in (Succeeded, Failed):
        return decode_result(data, what=str(path))
    if path.suffix == ".msgpack":
        decoded: msgspec.Struct = msgspec.msgpack.decode(data, type=record_type)
        return decoded
    return decode_json(data, record_type, what=str(path))


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_todays_encoding_equals_the_current_golden_bytes(name: str) -> None:
    path = tool.golden_path(name)
    assert path.exists(), f"{path} is missing: run `uv run python tools/write_golden.py`"
    assert tool.encode(EXAMPLES[name]) == path.read_bytes(), (
        f"Today's encoding of the {name} example differs from {path}. A released schema's "
        "wire format must not change: bump SCHEMA_VERSION, or rewrite this unreleased "
        "version with `uv run python tools/write_golden.py --force`."
    )


@pytest.mark.parametrize("path", GOLDEN_FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_golden_file_decodes_with_todays_structs(path: Path) -> None:
    name = path.parent.name
    assert name in EXAMPLES, f"{path} has no example in tools/write_golden.py"
    match = VERSIONED_FILE.match(path.name)
    assert match is not None
    version = int(match["version"])
    assert version <= SCHEMA_VERSION, f"{path} is newer than SCHEMA_VERSION {SCHEMA_VERSION}"
    decoded = _decode(path, type(EXAMPLES[name]))
    assert type(decoded) is type(EXAMPLES[name])
    if version == SCHEMA_VERSION:
        assert decoded == EXAMPLES[name]


def test_golden_files_exist_for_the_current_version_only_of_known_records() -> None:
    current = {p.parent.name for p in GOLDEN_FILES if p.name.startswith(f"v{SCHEMA_VERSION}.")}
    assert current == set(EXAMPLES)


def test_every_wire_record_has_an_example() -> None:
    """A new record type in kinetic_protocol.records or .batch needs a golden file too."""
    wire_types = {
        obj
        for module in (records, batch)
        for name in module.__all__
        if inspect.isclass(obj := getattr(module, name)) and issubclass(obj, msgspec.Struct)
    }
    covered = {type(example) for example in EXAMPLES.values()}
    assert wire_types - covered == set()
    assert {Succeeded, Failed} <= covered


NEVER_WRITTEN = {("call_descriptor", "env")}
"""Fields kept declared for older readers (never removed within a version) that writers leave
at their default: ``CallDescriptor.env`` once held captured values, which the store must not."""


def test_the_examples_exercise_every_field() -> None:
    """Defaults hide fields from a golden file's point of view; examples set each one."""
    for name, example in EXAMPLES.items():
        for field in msgspec.structs.fields(example):
            if field.name == "schema_version" or (name, field.name) in NEVER_WRITTEN:
                continue
            value = getattr(example, field.name)
            if field.default is not msgspec.NODEFAULT:
                assert value != field.default, f"{name}.{field.name} keeps its default"
            elif field.default_factory is not msgspec.NODEFAULT:
                assert value != field.default_factory(), f"{name}.{field.name} keeps its default"
