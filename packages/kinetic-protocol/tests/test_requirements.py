"""Requirements discovery: requirements.txt first, else the nearest pyproject.toml."""

from collections.abc import Callable
from pathlib import Path

import pytest

from kinetic_protocol.errors import ConfigError
from kinetic_protocol.requirements import (
    discover_requirements,
    jax_build_notice,
    jax_requirement,
    prebuilt_requirements,
    requirement_extras,
    requirement_name,
    with_jax_build,
)

WriteFiles = Callable[[Path, dict[str, str]], Path]
"""The ``write`` fixture: create files (relative path -> text) under a root, return it."""


def test_requirements_txt_drops_comments_blank_lines_and_joins_continuations(
    write: WriteFiles,
    tmp_path: Path,
) -> None:
    write(
        tmp_path,
        {
            "requirements.txt": (
                "# a comment\n\nnumpy==1.26.4  # pinned\n"
                "  requests>=2 \\\n   ; python_version >= '3.8'\n"
                "--extra-index-url https://example.com/simple\n"
                "pkg @ https://example.com/pkg.whl#sha256=abc\n"
            ),
        },
    )
    reqs = discover_requirements(tmp_path)
    assert reqs.lines == (
        "numpy==1.26.4",
        "requests>=2 ; python_version >= '3.8'",
        "--extra-index-url https://example.com/simple",
        "pkg @ https://example.com/pkg.whl#sha256=abc",
    )
    assert reqs.source == str(tmp_path / "requirements.txt")


def test_requirements_txt_wins_over_pyproject(write: WriteFiles, tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "requirements.txt": "from-requirements\n",
            "pyproject.toml": '[project]\nname = "x"\ndependencies = ["from-pyproject"]\n',
        },
    )
    assert prebuilt_requirements(tmp_path) == ["from-requirements"]


def test_pyproject_dependencies_are_used_without_requirements_txt(
    write: WriteFiles, tmp_path: Path
) -> None:
    write(
        tmp_path,
        {
            "pyproject.toml": (
                '[project]\nname = "x"\n'
                'dependencies = ["jax[tpu]>=0.4", "  optax  ", ""]\n'
                '[project.optional-dependencies]\ndev = ["pytest"]\n'
            )
        },
    )
    assert prebuilt_requirements(tmp_path) == ["jax[tpu]>=0.4", "optax"]


def test_nearest_pyproject_in_a_parent_directory_is_found(
    write: WriteFiles, tmp_path: Path
) -> None:
    write(tmp_path, {"pyproject.toml": '[project]\nname = "x"\ndependencies = ["parent-dep"]\n'})
    sub = tmp_path / "src" / "app"
    sub.mkdir(parents=True)
    assert prebuilt_requirements(sub) == ["parent-dep"]


def test_no_requirements_anywhere_gives_an_empty_list(tmp_path: Path) -> None:
    assert not any((d / "pyproject.toml").exists() for d in (tmp_path, *tmp_path.parents))
    reqs = discover_requirements(tmp_path)
    assert reqs.lines == ()
    assert reqs.source == ""


def test_pyproject_without_dependencies_gives_an_empty_list(
    write: WriteFiles, tmp_path: Path
) -> None:
    write(tmp_path, {"pyproject.toml": '[project]\nname = "x"\n'})
    assert prebuilt_requirements(tmp_path) == []


def test_includes_are_inlined(write: WriteFiles, tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "requirements.txt": "-r base.txt\nlocal-top\n",
            "base.txt": "# base\nbase-dep==1\n--requirement=more/extra.txt\n",
            "more/extra.txt": "extra-dep\n",
        },
    )
    assert prebuilt_requirements(tmp_path) == ["base-dep==1", "extra-dep", "local-top"]


def test_a_self_including_file_is_reported(write: WriteFiles, tmp_path: Path) -> None:
    write(tmp_path, {"requirements.txt": "-r requirements.txt\n"})
    with pytest.raises(ConfigError, match="includes itself"):
        discover_requirements(tmp_path)


@pytest.mark.parametrize("line", ["-e .", ".", "./libs/mine", "/abs/pkg", "file:///x/y"])
def test_local_path_requirements_are_rejected_with_advice(
    write: WriteFiles, tmp_path: Path, line: str
) -> None:
    write(tmp_path, {"requirements.txt": f"ok-dep\n{line}\n"})
    with pytest.raises(ConfigError, match="local path") as info:
        discover_requirements(tmp_path)
    assert repr(line) in str(info.value)
    assert "code bundle" in str(info.value)


def test_malformed_pyproject_is_a_clear_config_error(write: WriteFiles, tmp_path: Path) -> None:
    write(tmp_path, {"pyproject.toml": "[project\n"})
    with pytest.raises(ConfigError, match=r"pyproject\.toml"):
        discover_requirements(tmp_path)


def test_non_list_dependencies_are_rejected(write: WriteFiles, tmp_path: Path) -> None:
    write(tmp_path, {"pyproject.toml": '[project]\nname = "x"\ndependencies = "numpy"\n'})
    with pytest.raises(ConfigError, match="list of strings"):
        discover_requirements(tmp_path)


@pytest.mark.parametrize(
    ("line", "name"),
    [
        ("jax==0.4.30", "jax"),
        ("JAX[tpu] >= 0.4", "jax"),
        ("jaxlib", "jaxlib"),
        ("jax @ https://example.com/jax.whl", "jax"),
        ("jax; python_version >= '3.10'", "jax"),
        ("jax_ai_stack", "jax-ai-stack"),
        ("Flax.Core~=1.0", "flax-core"),
        ("--index-url https://example.com/simple", None),
        ("git+https://github.com/google/jax", None),
        ("https://example.com/jax.whl", None),
    ],
)
def test_requirement_names_are_normalised(line: str, name: str | None) -> None:
    assert requirement_name(line) == name


@pytest.mark.parametrize(
    ("lines", "category", "expected"),
    [
        ((), "tpu", "jax[tpu]"),
        ((), "gpu", "jax[cuda12]"),
        ((), "cpu", None),
        (("flax", "jax-ai-stack"), "tpu", "jax[tpu]"),
        (("jax==0.4.30",), "tpu", None),
        (("Jax_Lib==0.4.30",), "gpu", "jax[cuda12]"),
        (("JAXLIB==0.4.30",), "gpu", "jax[cuda12]"),
        (("jax[cpu]",), "gpu", None),
    ],
)
def test_jax_requirement_defers_to_a_user_pin(
    lines: tuple[str, ...], category: str, expected: str | None
) -> None:
    assert jax_requirement(lines, category) == expected


@pytest.mark.parametrize(
    ("line", "category", "rewritten"),
    [
        ("jax", "tpu", "jax[tpu]"),
        ("jax>=0.4.30", "tpu", "jax[tpu]>=0.4.30"),
        ("jax>=0.4.30", "gpu", "jax[cuda12]>=0.4.30"),
        ("jax >= 0.4.30, <0.6", "tpu", "jax[tpu] >= 0.4.30, <0.6"),
        ("JAX==0.4.30", "tpu", "JAX[tpu]==0.4.30"),
        ("jax; python_version >= '3.10'", "gpu", "jax[cuda12]; python_version >= '3.10'"),
        (
            "jax==0.4.30 ; sys_platform == 'linux'",
            "tpu",
            "jax[tpu]==0.4.30 ; sys_platform == 'linux'",
        ),
        ("jax @ https://example.com/jax.whl", "tpu", "jax[tpu] @ https://example.com/jax.whl"),
        ("jax[k8s]>=0.4", "tpu", "jax[k8s,tpu]>=0.4"),
        ("jax[ k8s ]", "gpu", "jax[k8s,cuda12]"),
        # an explicit build extra is the user's choice
        ("jax[cpu]>=0.4.30", "tpu", "jax[cpu]>=0.4.30"),
        ("jax[CPU]", "gpu", "jax[CPU]"),
        ("jax[cuda12]==0.4.30", "tpu", "jax[cuda12]==0.4.30"),
        ("jax[cuda13]", "gpu", "jax[cuda13]"),
        ("jax[tpu]", "tpu", "jax[tpu]"),
        ("jax[k8s,cpu]", "tpu", "jax[k8s,cpu]"),
        # not the project jax
        ("jaxlib==0.4.30", "tpu", "jaxlib==0.4.30"),
        ("jax-ai-stack", "tpu", "jax-ai-stack"),
        ("flax", "gpu", "flax"),
        ("--find-links https://example.com/jax", "tpu", "--find-links https://example.com/jax"),
        # cpu jobs keep every line as written
        ("jax>=0.4.30", "cpu", "jax>=0.4.30"),
    ],
)
def test_a_users_jax_gets_the_accelerator_build_with_its_constraints_kept(
    line: str, category: str, rewritten: str
) -> None:
    assert with_jax_build((line,), category) == (rewritten,)


def test_only_jax_lines_change_and_order_is_kept() -> None:
    lines = ("--index-url https://example.com/simple", "optax", "jax>=0.4.30", "numpy")
    assert with_jax_build(lines, "tpu") == (
        "--index-url https://example.com/simple",
        "optax",
        "jax[tpu]>=0.4.30",
        "numpy",
    )


def test_discovered_requirements_are_rewritten_after_comments_and_includes(
    write: WriteFiles, tmp_path: Path
) -> None:
    write(
        tmp_path,
        {
            "requirements.txt": "-r base.txt\noptax  # optimisers\n",
            "base.txt": "# JAX first\njax>=0.4.30  # pinned low\n",
        },
    )
    lines = discover_requirements(tmp_path).lines
    assert with_jax_build(lines, "tpu") == ("jax[tpu]>=0.4.30", "optax")


def test_the_notice_names_each_rewritten_line_and_how_to_opt_out() -> None:
    message = jax_build_notice(("optax", "jax>=0.4.30"), "tpu")
    assert message is not None
    assert "'jax>=0.4.30' as 'jax[tpu]>=0.4.30'" in message
    assert "optax" not in message
    assert "'jax[cpu]'" in message
    assert jax_build_notice(("jax[cpu]",), "tpu") is None
    assert jax_build_notice(("jax>=0.4.30",), "cpu") is None
    assert jax_build_notice((), "gpu") is None


@pytest.mark.parametrize(
    ("line", "extras"),
    [
        ("jax", ()),
        ("jax[tpu]>=0.4", ("tpu",)),
        ("JAX[TPU, cpu] >= 0.4 ; python_version >= '3.10'", ("tpu", "cpu")),
        ("jax [tpu] @ https://example.com/jax.whl", ("tpu",)),
        ("jax; extra == 'tpu'", ()),
        ("--find-links https://example.com/[tpu]", ()),
    ],
)
def test_requirement_extras_are_the_projects_own_lowercased(
    line: str, extras: tuple[str, ...]
) -> None:
    assert requirement_extras(line) == extras
