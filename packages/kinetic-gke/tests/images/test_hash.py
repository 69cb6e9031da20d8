"""The image tag hash: stable across machines, sensitive to everything in the image."""

import hashlib
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from kinetic_gke.images import build_context, content_hash, discover_requirements
from kinetic_protocol.requirements import Requirements

WriteFiles = Callable[[Path, dict[str, str]], Path]
"""The ``write`` fixture: create files (relative path -> text) under a root, return it."""


_PROJECT = {
    "requirements.txt": "numpy==1.26.4\nrequests>=2\n",
    "main.py": "import numpy\n",
}

_HASH_SCRIPT = """
import sys
from pathlib import Path
from kinetic_gke.images import build_context, discover_requirements
ctx = build_context(discover_requirements(Path(sys.argv[1])), category="gpu",
                    kinetic_version="1.0", python_version="3.11")
print(ctx.content_hash)
"""


def _hash(root: Path, **kwargs: str) -> str:
    options = {"category": "gpu", "kinetic_version": "1.0", "python_version": "3.11"} | kwargs
    return build_context(discover_requirements(root), **options).content_hash  # type: ignore[arg-type]


def test_content_hash_is_a_fixed_function_of_paths_and_bytes() -> None:
    """Pinned format: if this changes, every user's cached image is rebuilt once."""
    files = {"requirements.txt": b"numpy\n", "Dockerfile": b"FROM scratch\n"}
    expected = hashlib.sha256(
        b"kinetic-image-context/1\n"
        + b"10:Dockerfile"
        + b"13:FROM scratch\n"
        + b"16:requirements.txt"
        + b"6:numpy\n"
    ).hexdigest()
    assert content_hash(files) == expected
    assert expected == "b86ba07ce654e18613004c257270a1482df769cb9f02054c378681f648d23f5f"


def test_content_hash_ignores_dict_order_but_not_names_or_bytes() -> None:
    forward = {"a": b"1", "b": b"2"}
    backward = {"b": b"2", "a": b"1"}
    assert content_hash(forward) == content_hash(backward)
    assert content_hash(forward) != content_hash({"a": b"2", "b": b"1"})
    assert content_hash({"ab": b"c"}) != content_hash({"a": b"bc"})
    assert content_hash({"a": b""}) != content_hash({})


def test_same_project_elsewhere_later_in_another_process_hashes_the_same(
    write: WriteFiles,
    tmp_path: Path,
) -> None:
    """Moving the project, touching its files and changing the environment change nothing."""
    here = write(tmp_path / "machine-a" / "proj", _PROJECT)
    there = tmp_path / "machine-b" / "deeper" / "checkout"
    shutil.copytree(here, there)
    for path in there.rglob("*"):
        os.utime(path, (1_000_000, 1_000_000))
    env = dict(os.environ, PYTHONHASHSEED="12345", HOME=str(tmp_path), KINETIC_ZONE="x", LANG="C")
    result = subprocess.run(
        [sys.executable, "-c", _HASH_SCRIPT, str(there)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert result.stdout.strip() == _hash(here)


def test_formatting_of_requirements_does_not_matter(write: WriteFiles, tmp_path: Path) -> None:
    plain = write(tmp_path / "plain", _PROJECT)
    commented = write(
        tmp_path / "commented",
        {"requirements.txt": "# deps\n\nnumpy==1.26.4   # the array library\n\nrequests>=2\n"},
    )
    assert _hash(plain) == _hash(commented)


def test_pyproject_and_requirements_with_the_same_lines_hash_the_same(
    write: WriteFiles, tmp_path: Path
) -> None:
    txt = write(tmp_path / "txt", _PROJECT)
    toml = write(
        tmp_path / "toml",
        {
            "pyproject.toml": (
                '[project]\nname = "p"\ndependencies = ["numpy==1.26.4", "requests>=2"]\n'
            )
        },
    )
    assert _hash(txt) == _hash(toml)


def test_project_code_does_not_affect_the_hash(write: WriteFiles, tmp_path: Path) -> None:
    root = write(tmp_path, _PROJECT)
    before = _hash(root)
    write(root, {"main.py": "print('changed')\n", "new_module.py": "x = 1\n"})
    assert _hash(root) == before


@pytest.mark.parametrize(
    "change",
    [
        {"requirements": ("numpy==1.26.5", "requests>=2")},
        {"requirements": ("numpy==1.26.4",)},
        {"requirements": ("requests>=2", "numpy==1.26.4")},
        {"python_version": "3.12"},
        {"category": "cpu"},
        {"category": "tpu"},
        {"kinetic_version": "1.0.1"},
        {"base_image": "nvidia/cuda:12.6.0-runtime-ubuntu22.04"},
    ],
)
def test_every_input_changes_the_hash(change: dict[str, object]) -> None:
    base: dict[str, object] = {
        "requirements": ("numpy==1.26.4", "requests>=2"),
        "category": "gpu",
        "kinetic_version": "1.0",
        "python_version": "3.11",
        "base_image": None,
    }

    def make(options: dict[str, object]) -> str:
        opts = dict(options)
        reqs = Requirements(lines=opts.pop("requirements"), source="")  # type: ignore[arg-type]
        return build_context(reqs, **opts).content_hash  # type: ignore[arg-type]

    assert make(base | change) != make(base)
