"""Functions the data scenarios run remotely (imported by jobs from the code bundle)."""

import os
from collections import namedtuple
from dataclasses import dataclass
from pathlib import Path
from typing import Any

Pair = namedtuple("Pair", "first second")


@dataclass
class Config:
    dataset: Any
    label: str


def read_tree(path: str) -> dict[str, str]:
    """Every file under ``path`` (or ``path`` itself) by its relative name, with its text."""
    root = Path(path)
    if root.is_file():
        return {root.name: root.read_text()}
    return {
        p.relative_to(root).as_posix(): p.read_text()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def describe(value: Any) -> dict[str, Any]:
    """The path a Data became: its type, whether it exists, what it holds."""
    return {"type": type(value).__name__, "path": value, "files": read_tree(value)}


def two_arguments(directory: Any, single: Any) -> dict[str, Any]:
    return {"directory": describe(directory), "single": describe(single)}


def nested(
    shared: list[Any], again: list[Any], mapping: dict[str, Any], pair: Pair, config: Config
) -> dict[str, Any]:
    """Where each nested Data ended up, and whether containers kept their identity."""
    paths = [shared[0], again[0], mapping["data"], pair.first, config.dataset]
    return {
        "types": sorted({type(p).__name__ for p in paths}),
        "container_types": [type(pair).__name__, type(config).__name__, type(mapping).__name__],
        "same_list": shared is again,
        "paths": paths,
        "tuple_kept": isinstance(pair, tuple) and pair.second == 7,
        "label": config.label,
        "files": read_tree(shared[0]),
    }


def read_paths(*paths: str) -> dict[str, dict[str, str]]:
    return {path: read_tree(path) for path in paths}


def not_reached(_data: Any) -> str:
    """Must never run: its data cannot be staged."""
    from kinetic_runtime.outputs import outputs

    with outputs() as out:
        (out / "ran").write_text("the function ran")
    return "the function ran"


def volume_and_argument(argument: str) -> dict[str, Any]:
    return {
        "argument": argument,
        "at_volume": read_tree("/data"),
        "via_argument": read_tree(argument),
    }


def hf_rows(path: str) -> dict[str, Any]:
    import datasets

    loaded = datasets.load_from_disk(path)
    if isinstance(loaded, datasets.DatasetDict):
        return {split: loaded[split]["text"] for split in sorted(loaded)}
    return {"rows": list(loaded["text"]), "is_dir": Path(path).is_dir()}


def write_outputs(names: list[str]) -> str:
    """Write ``names`` under the output directory with the runtime's helper."""
    from kinetic_runtime.outputs import outputs

    with outputs("results") as out:
        for name in names:
            target = out / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(f"content of {name}")
    return os.environ["KINETIC_OUTPUT_DIR"]


def hf_many(*paths: str) -> list[dict[str, Any]]:
    return [hf_rows(path) for path in paths]


def try_to_write(path: str) -> str:
    try:
        Path(path).write_text("x")
    except OSError as exc:
        return exc.strerror or str(exc)
    return "written"
