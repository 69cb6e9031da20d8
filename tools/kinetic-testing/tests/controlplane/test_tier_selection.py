"""How the test plugin selects, builds for and skips the real control plane tier.

Each case runs pytest in a subprocess, as a developer would: a collection that must not build,
``-m "not realk8s"`` that must leave every Kubernetes test out, a machine without Go where the
tier is skipped with one line, and a scenario environment that removes ``KINETIC_*`` variables
before the control plane is first asked for.
"""

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from kinetic_testing.controlplane.build import BINARIES

ROOT = Path(__file__).resolve().parents[4]
_SKIP_LINE = "real Kubernetes control plane tier skipped"
_INI = """\
[pytest]
addopts = -p kinetic_testing.pytest_plugin -p no:cacheprovider
markers =
    realk8s: the control plane tier
"""


def _pytest(args: list[str], *, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )


def _environment(tmp_path: Path, *, path: str) -> dict[str, str]:
    """This environment with an empty control plane cache and ``path`` as ``PATH``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("KINETIC_")}
    env.update(KINETIC_K8S_CACHE=str(tmp_path / "empty-cache"), PATH=path)
    return env


def _fake_go(tmp_path: Path) -> tuple[Path, Path]:
    """A ``go`` that says it is new enough and records that it ran: a build would call it."""
    bin_dir, ran = tmp_path / "fake-go-bin", tmp_path / "go-ran"
    bin_dir.mkdir()
    go = bin_dir / "go"
    go.write_text(f'#!/bin/sh\necho "$@" >> {ran}\necho go1.26.0\nexit 1\n')
    go.chmod(0o755)
    return bin_dir, ran


def _project(tmp_path: Path, test_source: str) -> Path:
    project = tmp_path / "project"
    project.mkdir()
    (project / "pytest.ini").write_text(_INI)
    (project / "test_tier.py").write_text(textwrap.dedent(test_source))
    return project


def test_a_collection_alone_never_starts_the_build(tmp_path: Path) -> None:
    bin_dir, ran = _fake_go(tmp_path)
    project = _project(
        tmp_path,
        """
        def test_uses_the_cluster(real_k8s):
            pass
        """,
    )
    path = os.pathsep.join([str(bin_dir), str(Path(sys.executable).parent), "/usr/bin:/bin"])
    done = _pytest(["--collect-only", "-q"], cwd=project, env=_environment(tmp_path, path=path))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "test_tier.py::test_uses_the_cluster" in done.stdout
    assert not ran.exists(), f"go was run: {ran.read_text()}"
    assert "building" not in done.stdout + done.stderr


def test_the_environment_a_test_cleans_does_not_hide_the_binaries(tmp_path: Path) -> None:
    """The scenario suite removes every ``KINETIC_*`` variable (``KINETIC_K8S_CACHE`` too)
    before a backend fixture first asks for the cluster: the binaries found at collection
    are still the ones used."""
    cache = tmp_path / "cache"
    from kinetic_testing.controlplane.jobset_build import JOBSET_BINARY, JOBSET_CRD
    from kinetic_testing.controlplane.kueue_build import KUEUE_BINARY
    from kinetic_testing.controlplane.versions import CACHE_ENV, PINS

    built = cache / f"bin-{PINS.key}"
    built.mkdir(parents=True)
    for name in (*BINARIES, "VERSIONS"):
        (built / name).write_text("")
    kueue = cache / f"kueue-{PINS.kueue_key}"
    kueue.mkdir()
    for name in (KUEUE_BINARY, "VERSIONS"):
        (kueue / name).write_text("")
    jobset = cache / f"jobset-{PINS.jobset_key}"
    jobset.mkdir()
    for name in (JOBSET_BINARY, JOBSET_CRD, "VERSIONS"):
        (jobset / name).write_text("")
    project = _project(
        tmp_path,
        f"""
        import pytest

        @pytest.fixture(autouse=True)
        def cleaned(monkeypatch):
            monkeypatch.delenv("{CACHE_ENV}")

        @pytest.mark.realk8s
        def test_asks_late(request):
            binaries = request.getfixturevalue("k8s_binaries")
            assert str(binaries.directory) == {str(built)!r}
        """,
    )
    bin_dir, ran = _fake_go(tmp_path)  # a cache taken for incomplete would start a build
    env = _environment(tmp_path, path=os.pathsep.join([str(bin_dir), os.environ["PATH"]]))
    env[CACHE_ENV] = str(cache)
    done = _pytest(["-q"], cwd=project, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed" in done.stdout
    assert not ran.exists(), f"go was run: {ran.read_text()}"


@pytest.fixture(scope="module")
def scenario_ids_without_the_tier() -> list[str]:
    done = _pytest(
        ["--collect-only", "-q", "-m", "not realk8s", "tests/scenarios"],
        cwd=ROOT,
        env={k: v for k, v in os.environ.items() if k != "KINETIC_REQUIRE_REAL_K8S"},
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return [line for line in done.stdout.splitlines() if "::" in line]


def test_not_realk8s_leaves_out_every_kubernetes_scenario(
    scenario_ids_without_the_tier: list[str],
) -> None:
    assert scenario_ids_without_the_tier, "nothing was collected"
    kubernetes = [
        node
        for node in scenario_ids_without_the_tier
        if any(word in node for word in ("[gke", "[pathways", "-gke", "-pathways", "gke]"))
        or any(f"/test_{name}" in node for name in ("gke_", "pathways_"))
    ]
    assert kubernetes == []
    assert any("[local" in node for node in scenario_ids_without_the_tier)


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["one-process", "two-workers"])
def test_without_go_every_kubernetes_scenario_is_skipped_with_one_line(
    tmp_path: Path, workers: list[str]
) -> None:
    """Also when test workers skip them: each sends its line, the terminal shows it once."""
    path = os.pathsep.join([str(Path(sys.executable).parent), "/usr/bin", "/bin"])
    env = _environment(tmp_path, path=path)
    done = _pytest(
        ["-q", *workers, "-k", "gke or pathways", "tests/scenarios/test_lifecycle.py"],
        cwd=ROOT,
        env=env,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    assert " passed" not in output and " error" not in output and " failed" not in output
    assert " skipped" in output
    summary = [line for line in output.splitlines() if line.startswith(_SKIP_LINE)]
    assert len(summary) == 1, output
    assert "No Go toolchain on PATH" in summary[0]
