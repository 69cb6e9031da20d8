"""Where buildah and debootstrap are missing, the image tier is skipped with one line saying
how to enable it, or, with ``KINETIC_REQUIRE_IMAGES=1`` (CI), the run fails saying so.

Each case runs pytest in a subprocess whose ``PATH`` holds only its Python.
"""

import os
import subprocess
import sys
import textwrap
from pathlib import Path

_INI = """\
[pytest]
addopts = -p kinetic_testing.pytest_plugin -p no:cacheprovider
markers =
    images: the image tier
    accelerator_images: an accelerator image build
"""
_TEST = """
import pytest

@pytest.mark.images
def test_builds_an_image(oci_images):
    pass

def test_other():
    pass
"""


_ACCELERATOR_TEST = """
import pytest

@pytest.mark.images
@pytest.mark.accelerator_images
def test_builds_a_tpu_image(oci_images):
    pass

def test_other():
    pass
"""


def _run(tmp_path: Path, test: str = _TEST, **extra: str) -> subprocess.CompletedProcess[str]:
    project = tmp_path / "project"
    project.mkdir()
    (project / "pytest.ini").write_text(_INI)
    (project / "test_tier.py").write_text(textwrap.dedent(test))
    env = {k: v for k, v in os.environ.items() if not k.startswith("KINETIC_")}
    env.update(
        PATH=str(Path(sys.executable).parent),
        KINETIC_IMAGES_CACHE=str(tmp_path / "cache"),
        **extra,
    )
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-rs"], cwd=project, env=env, capture_output=True,
        text=True, timeout=120, check=False,
    )  # fmt: skip


def _one_skip_line(done: subprocess.CompletedProcess[str], starting: str) -> str:
    """The run passed its other test, skipped the tier's, and said why in one summary line."""
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    assert "1 passed, 1 skipped" in output
    lines = [line for line in output.splitlines() if line.startswith(starting)]
    assert len(lines) == 1, output
    return lines[0]


def test_without_buildah_the_tier_is_skipped_with_one_line_saying_how_to_enable_it(
    tmp_path: Path,
) -> None:
    line = _one_skip_line(_run(tmp_path), "image tier skipped")
    assert "buildah and debootstrap not found" in line
    assert "apt-get install -y buildah debootstrap" in line
    assert not (tmp_path / "cache").exists()  # nothing was built or prepared


def test_ci_requiring_the_tier_fails_instead_of_skipping(tmp_path: Path) -> None:
    done = _run(tmp_path, KINETIC_REQUIRE_IMAGES="1")
    output = done.stdout + done.stderr
    assert done.returncode != 0
    assert (
        "KINETIC_REQUIRE_IMAGES is set, but: image tier skipped: buildah and debootstrap" in output
    )


def test_an_accelerator_image_build_runs_only_when_asked_for_saying_how(tmp_path: Path) -> None:
    """Skipped with one line, before anything of the tier is prepared; even where the tier is
    required (a tpu build is a step of its own in ``.ci/run``)."""
    done = _run(tmp_path, _ACCELERATOR_TEST, KINETIC_REQUIRE_IMAGES="1")
    assert "KINETIC_ACCELERATOR_IMAGES=1 builds them" in _one_skip_line(done, "accelerator image")
    assert not (tmp_path / "cache").exists()


def test_an_accelerator_image_build_asked_for_goes_through_the_tier(tmp_path: Path) -> None:
    done = _run(tmp_path, _ACCELERATOR_TEST, KINETIC_ACCELERATOR_IMAGES="1")
    assert "buildah and debootstrap not found" in _one_skip_line(done, "image tier skipped")
