"""The build step: where binaries go, what counts as built, and what a missing Go says."""

import io
from pathlib import Path

import pytest

from kinetic_testing.controlplane import build, kueue_build, versions
from kinetic_testing.controlplane.build import BINARIES, BuildError, built, go_toolchain
from kinetic_testing.controlplane.jobset_build import JOBSET_BINARY, JOBSET_CRD
from kinetic_testing.controlplane.kueue_build import KUEUE_BINARY
from kinetic_testing.controlplane.versions import Pins, bin_dir, jobset_dir, kueue_dir


def test_the_cache_is_keyed_by_the_pinned_versions(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv(versions.CACHE_ENV, str(tmp_path))
    one, other = Pins(), Pins(lws="v0.7.0")
    assert bin_dir(one).parent == tmp_path
    assert bin_dir(one) != bin_dir(other)
    assert bin_dir(one) == bin_dir(Pins())


def test_staging_modules_follow_the_kubernetes_version() -> None:
    assert Pins(kubernetes="v1.36.3").staging == "v0.36.3"
    assert Pins(kubernetes="v1.36.3").minor == "36"


def _finished_jobset() -> None:
    jobset = jobset_dir()
    jobset.mkdir(parents=True)
    for name in ("VERSIONS", JOBSET_BINARY, JOBSET_CRD):
        (jobset / name).write_bytes(b"")


def test_a_partial_build_is_not_built(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(versions.CACHE_ENV, str(tmp_path))
    directory, kueue = bin_dir(), kueue_dir()
    directory.mkdir(parents=True)
    kueue.mkdir(parents=True)
    (kueue / "VERSIONS").write_text("x")
    (kueue / KUEUE_BINARY).write_bytes(b"")
    _finished_jobset()
    for name in BINARIES[:-1]:
        (directory / name).write_bytes(b"")
    (directory / "VERSIONS").write_text("x")
    assert built() is None, "one binary is missing"
    (directory / BINARIES[-1]).write_bytes(b"")
    assert built() is not None
    (kueue / KUEUE_BINARY).unlink()
    assert built() is None, "Kueue's controller is missing"
    (kueue / KUEUE_BINARY).write_bytes(b"")
    (jobset_dir() / JOBSET_BINARY).unlink()
    assert built() is None, "JobSet's controller is missing"


def test_a_cache_made_before_jobset_builds_only_jobset(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv(versions.CACHE_ENV, str(tmp_path))
    directory, kueue = bin_dir(), kueue_dir()
    directory.mkdir(parents=True)
    kueue.mkdir(parents=True)
    for name in (*BINARIES, "VERSIONS"):
        (directory / name).write_bytes(b"")
    (kueue / "VERSIONS").write_text("x")
    (kueue / KUEUE_BINARY).write_bytes(b"")
    steps: list[str] = []
    for step in ("_build_plane", "_build_kueue"):
        monkeypatch.setattr(build._Builder, step, lambda self, step=step: steps.append(step))
    monkeypatch.setattr(
        build, "build_jobset", lambda go, src, mod, out, pins: steps.append(out.name)
    )
    builder = build._Builder("go", tmp_path, Pins(), build.Progress("test", io.StringIO()))
    builder.run()
    assert steps == [f"{jobset_dir().name}.partial"]
    assert (
        jobset_dir().is_dir()
        and not jobset_dir().with_name(jobset_dir().name + ".partial").exists()
    )


def test_kueue_has_a_directory_of_its_own_so_adding_it_rebuilds_nothing_else() -> None:
    assert Pins().key == Pins(kueue="v0.99.0").key
    assert Pins().kueue_key != Pins(kueue="v0.99.0").kueue_key


def test_jobset_has_a_directory_of_its_own_so_adding_it_rebuilds_nothing_else() -> None:
    bumped = Pins(jobset="v0.99.0")
    assert (Pins().key, Pins().kueue_key) == (bumped.key, bumped.kueue_key)
    assert Pins().jobset_key != bumped.jobset_key


def test_the_patches_that_let_kueue_run_outside_a_container_apply_or_fail_loudly() -> None:
    main = (
        'import (\n\t"sigs.k8s.io/kueue/pkg/visibility"\n)\n'
        '\t\tmetricsCertPath := "/etc/kueue/metrics/certs"\n'
    )
    patched = kueue_build._patched_main(main)
    assert "kinetic.test/kueue-patched/visibility" in patched
    assert 'os.Getenv("KUEUE_METRICS_CERT_DIR")' in patched
    server = 'import (\n\t"context"\n)\nvar (\n\tcertDir = "/visibility"\n)\n'
    assert 'os.Getenv("KUEUE_VISIBILITY_CERT_DIR")' in kueue_build._patched_visibility(server)
    with pytest.raises(RuntimeError, match="needs updating for this version"):
        kueue_build._patched_main(main.replace("/etc/kueue/metrics/certs", "/elsewhere"))


def test_without_go_the_error_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(build.shutil, "which", lambda name: None)
    with pytest.raises(BuildError, match=r"No Go toolchain on PATH.*Install Go 1\.26"):
        go_toolchain()


def test_the_command_line_exits_1_with_one_line_without_go(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv(versions.CACHE_ENV, str(tmp_path))
    monkeypatch.setattr(build.shutil, "which", lambda name: None)
    codes: list[int] = []
    build.main(["build"], exit=codes.append)
    assert codes == [1]
    err = capsys.readouterr().err
    assert err.startswith("error: No Go toolchain") and "Traceback" not in err
