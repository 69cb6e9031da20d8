"""The generated Dockerfile and build context: bases, layer order, uv, no project code."""

from collections.abc import Callable
from pathlib import Path

import pytest

from kinetic_gke.images import BASE_IMAGES, build_context, discover_requirements
from kinetic_gke.images.dockerfile import CUDA_BASE_IMAGE, LIBTPU_FIND_LINKS, Category
from kinetic_protocol.errors import ConfigError
from kinetic_protocol.requirements import Requirements

WriteFiles = Callable[[Path, dict[str, str]], Path]
"""The ``write`` fixture: create files (relative path -> text) under a root, return it."""


def _reqs(*lines: str) -> Requirements:
    return Requirements(lines=lines, source="test")


def _instructions(dockerfile: str) -> list[str]:
    """Instruction keywords in order, ignoring comments and continuation lines."""
    out = []
    for line in dockerfile.splitlines():
        if line and not line.startswith(("#", " ")):
            out.append(line.split()[0])
    return out


def test_choice_table_is_explicit_for_every_category() -> None:
    assert set(BASE_IMAGES) == {"cpu", "gpu", "tpu"}
    assert BASE_IMAGES["gpu"] == CUDA_BASE_IMAGE
    assert CUDA_BASE_IMAGE.startswith("nvidia/cuda:12.")
    assert "-runtime-" in CUDA_BASE_IMAGE


@pytest.mark.parametrize(
    ("category", "base"),
    [
        ("cpu", "python:3.12-slim"),
        ("tpu", "python:3.12-slim"),
        ("gpu", "nvidia/cuda:12.4.1-runtime-ubuntu22.04"),
    ],
)
def test_each_category_starts_from_its_base_image(category: Category, base: str) -> None:
    ctx = build_context(
        _reqs("numpy"), category=category, kinetic_version="1.2.3", python_version="3.12.4"
    )
    assert ctx.dockerfile.splitlines()[2] == f"FROM {base}"
    assert ctx.base_image == base
    assert ctx.python_version == "3.12"


def test_gpu_image_installs_the_users_python_with_uv() -> None:
    ctx = build_context(_reqs(), category="gpu", kinetic_version="1.0", python_version="3.11")
    assert "RUN uv python install 3.11 && uv venv /opt/venv --python 3.11" in ctx.dockerfile


def test_cpu_image_uses_the_base_images_python() -> None:
    ctx = build_context(_reqs(), category="cpu", kinetic_version="1.0", python_version="3.11")
    assert "uv venv /opt/venv --python /usr/local/bin/python3.11" in ctx.dockerfile
    assert "uv python install" not in ctx.dockerfile


def test_layers_run_heavy_first_and_runtime_is_pinned_with_the_user_requirements() -> None:
    ctx = build_context(
        _reqs("torch==2.3.0"), category="gpu", kinetic_version="0.4.2", python_version="3.11"
    )
    text = ctx.dockerfile
    assert _instructions(text) == [
        "FROM",
        "COPY",  # uv binary
        "ENV",
        "RUN",  # apt: certificates
        "RUN",  # python + venv
        "RUN",  # the non-root user pods run as
        "COPY",  # requirements
        "RUN",  # one install: requirements + JAX build + runtime, the venv given to that user
        "USER",
        "WORKDIR",
        "CMD",
    ]
    assert text.index("FROM") < text.index("uv python install") < text.index("COPY requirements")
    install = next(line for line in text.splitlines() if "uv pip install" in line)
    assert "-r /opt/kinetic/requirements.txt" in install
    assert "'kinetic-runtime[gcs,debug]==0.4.2'" in install
    assert "COPY --from=ghcr.io/astral-sh/uv:" in text
    assert "pip install" not in text.replace("uv pip install", "")


def test_build_context_holds_only_the_dockerfile_and_requirements(
    write: WriteFiles, tmp_path: Path
) -> None:
    write(
        tmp_path,
        {
            "requirements.txt": "numpy\n",
            "train.py": "print('hello')\n",
            "pkg/__init__.py": "",
        },
    )
    ctx = build_context(discover_requirements(tmp_path), category="cpu", kinetic_version="1.0")
    assert set(ctx.files) == {"Dockerfile", "requirements.txt"}
    assert ctx.files["requirements.txt"] == b"numpy\n"
    for instruction in ("COPY . ", "ADD ", "train.py", "pkg/"):
        assert instruction not in ctx.dockerfile


def test_without_requirements_there_is_no_requirements_file() -> None:
    ctx = build_context(_reqs(), category="cpu", kinetic_version="1.0")
    assert set(ctx.files) == {"Dockerfile"}
    assert "-r " not in ctx.dockerfile
    assert "kinetic-runtime[gcs,debug]==1.0" in ctx.dockerfile


def _install(ctx_dockerfile: str) -> str:
    """The install command of the Dockerfile's install step (without the ``chown`` after it)."""
    line = next(line for line in ctx_dockerfile.splitlines() if "uv pip install" in line)
    return line.removesuffix(" \\")


@pytest.mark.parametrize(
    ("category", "lines", "added"),
    [
        ("tpu", (), "'jax[tpu]'"),
        ("gpu", (), "'jax[cuda12]'"),
        ("tpu", ("flax",), "'jax[tpu]'"),
        ("gpu", ("jax-ai-stack", "jaxtyping"), "'jax[cuda12]'"),
        ("tpu", ("--index-url https://example.com/simple", "numpy"), "'jax[tpu]'"),
        ("gpu", ("jaxlib==0.4.30",), "'jax[cuda12]'"),
        ("tpu", ("jax==0.4.30",), None),
        ("gpu", ("jax==0.4.30",), None),
        ("tpu", ("JAX[tpu]>=0.4",), None),
        ("tpu", ("jax @ https://example.com/jax-0.4.30-py3-none-any.whl",), None),
        ("gpu", ("jax; python_version >= '3.10'",), None),
        ("cpu", (), None),
        ("cpu", ("flax",), None),
    ],
)
def test_accelerator_images_install_jax_unless_the_user_names_it(
    category: Category, lines: tuple[str, ...], added: str | None
) -> None:
    install = _install(
        build_context(_reqs(*lines), category=category, kinetic_version="1.0").dockerfile
    )
    jax_args = [arg for arg in install.split() if arg.startswith("'jax[")]
    assert jax_args == ([added] if added else [])
    if added:
        assert install.index(added) < install.index("kinetic-runtime"), "one resolution"


@pytest.mark.parametrize(
    ("category", "line", "installed"),
    [
        ("tpu", "jax>=0.4.30", "jax[tpu]>=0.4.30"),
        ("gpu", "jax==0.4.30", "jax[cuda12]==0.4.30"),
        ("gpu", "jax; python_version >= '3.10'", "jax[cuda12]; python_version >= '3.10'"),
        ("tpu", "jax[cpu]==0.4.30", "jax[cpu]==0.4.30"),
        ("cpu", "jax>=0.4.30", "jax>=0.4.30"),
    ],
)
def test_an_image_installs_the_users_jax_as_the_accelerator_build(
    category: Category, line: str, installed: str
) -> None:
    ctx = build_context(_reqs("numpy", line), category=category, kinetic_version="1.0")
    assert ctx.files["requirements.txt"].decode() == f"numpy\n{installed}\n"


@pytest.mark.parametrize("category", ["cpu", "tpu", "gpu"])
def test_no_image_sets_keras_backend(category: Category) -> None:
    """The runtime defaults ``KERAS_BACKEND`` in every job (``JOB_DEFAULTS``): one source of
    truth for every image and backend, so no image may set a second one."""
    from kinetic_runtime.workspace import JOB_DEFAULTS

    text = build_context(_reqs("jax==0.4.30"), category=category, kinetic_version="1.0").dockerfile
    assert "KERAS_BACKEND" not in text
    assert JOB_DEFAULTS["KERAS_BACKEND"] == "jax"


def test_cpu_images_are_unchanged_by_the_accelerator_extras() -> None:
    text = build_context(_reqs("numpy"), category="cpu", kinetic_version="1.0").dockerfile
    assert "jax" not in text
    assert _install(text) == (
        "RUN uv pip install --no-cache -r /opt/kinetic/requirements.txt "
        "'kinetic-runtime[gcs,debug]==1.0'"
    )


def test_the_jax_build_changes_the_image_hash() -> None:
    pinned = build_context(_reqs("jax==0.4.30"), category="tpu", kinetic_version="1.0")
    added = build_context(_reqs("jax==0.4.30"), category="gpu", kinetic_version="1.0")
    assert "'jax[" not in _install(pinned.dockerfile), "the user's own line carries the build"
    unpinned = build_context(_reqs("numpy"), category="tpu", kinetic_version="1.0")
    plain = build_context(_reqs("numpy"), category="cpu", kinetic_version="1.0")
    assert unpinned.files["requirements.txt"] == plain.files["requirements.txt"]
    assert len({pinned.content_hash, added.content_hash, unpinned.content_hash}) == 3
    assert unpinned.content_hash != plain.content_hash


@pytest.mark.parametrize(
    ("lines", "expect_index"),
    [
        ((), False),
        (("jax",), False),
        (("jax[tpu]>=0.4",), False),
        (("jax==0.5.1",), False),
        (("jax[cpu]==0.4.30",), False),
        (("libtpu",), False),
        (("libtpu-nightly",), True),
        (("jax==0.4.35",), True),
        (("jax[tpu]<0.5.1",), True),
        (("jax[tpu]~=0.4.30",), True),
        (("jax[tpu]==0.4.*",), True),
        (("jax[tpu]<=0.5.0 ; python_version >= '3.10'",), True),
    ],
)
def test_tpu_adds_libtpus_release_index_only_for_what_the_package_index_lacks(
    lines: tuple[str, ...], expect_index: bool
) -> None:
    """``jax[tpu]`` 0.5.1 and later take ``libtpu`` from PyPI; the extra index would only be
    one more host to reach (unreachable behind a mirror, as on the test machine)."""
    ctx = build_context(_reqs(*lines), category="tpu", kinetic_version="1.0")
    assert (LIBTPU_FIND_LINKS in ctx.dockerfile) is expect_index


def test_cpu_never_adds_the_libtpu_index() -> None:
    ctx = build_context(_reqs("jax[tpu]"), category="cpu", kinetic_version="1.0")
    assert LIBTPU_FIND_LINKS not in ctx.dockerfile


def test_python_version_defaults_to_this_interpreter() -> None:
    import sys

    ctx = build_context(_reqs(), category="cpu", kinetic_version="1.0")
    assert ctx.python_version == f"{sys.version_info.major}.{sys.version_info.minor}"


def test_bad_python_version_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="'three'"):
        build_context(_reqs(), category="cpu", kinetic_version="1.0", python_version="three")


def test_the_image_runs_as_the_non_root_user_pods_ask_for() -> None:
    """Pods set runAsUser 1000 (restricted Pod Security); that user owns the venv."""
    ctx = build_context(_reqs(), category="cpu", kinetic_version="1.0", python_version="3.11")
    assert "useradd --uid 1000" in ctx.dockerfile
    assert "chown 1000:1000 /workspace" in ctx.dockerfile
    assert "\nUSER 1000\n" in ctx.dockerfile


@pytest.mark.parametrize("category", ["cpu", "gpu", "tpu"])
def test_the_venv_changes_owner_in_the_step_that_fills_it(category: Category) -> None:
    """Each ``RUN`` is a layer: a ``chown -R`` of the venv in a step of its own would store
    every installed file twice (for JAX's GPU build, gigabytes more to push and pull)."""
    ctx = build_context(_reqs("six"), category=category, kinetic_version="1.0")
    steps = ctx.dockerfile.replace("\\\n", " ").splitlines()
    runs = [step for step in steps if step.startswith("RUN ")]
    [install] = [step for step in runs if "uv pip install" in step]
    assert install.endswith("&& chown -R 1000:1000 /opt/venv")
    assert [step for step in runs if "chown" in step and "/opt/venv" in step] == [install]


def test_a_call_with_hf_data_gets_the_runtimes_hf_extra_and_a_new_tag() -> None:
    plain = build_context(_reqs(), category="cpu", kinetic_version="1.0")
    with_hf = build_context(_reqs(), category="cpu", kinetic_version="1.0", runtime_extras=("hf",))
    assert "'kinetic-runtime[gcs,debug,hf]==1.0'" in _install(with_hf.dockerfile)
    assert with_hf.content_hash != plain.content_hash, "the image holding datasets is another"
    assert (
        build_context(
            _reqs(), category="cpu", kinetic_version="1.0", runtime_extras=("gcs",)
        ).content_hash
        == plain.content_hash
    ), "an extra that is always there changes nothing"
