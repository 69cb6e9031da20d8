"""The image tier's store uses ``overlay`` where buildah can, else ``vfs``, or the driver named."""

import os
from pathlib import Path

import pytest

from kinetic_testing.images.buildah import STORAGE_DRIVER_ENV, Buildah, storage_driver


def _buildah_on_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, script: str) -> None:
    """Put a ``buildah`` running ``script`` first on PATH (no real buildah refuses overlay here)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    tool = bin_dir / "buildah"
    tool.write_text(f"#!/bin/sh\n{script}\n")
    tool.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")


def test_a_buildah_that_cannot_open_an_overlay_store_gets_vfs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(STORAGE_DRIVER_ENV, raising=False)
    _buildah_on_path(
        tmp_path, monkeypatch, 'echo "kernel does not support overlay fs" >&2; exit 125'
    )
    assert storage_driver(tmp_path / "store") == "vfs"


def test_a_buildah_that_opens_an_overlay_store_gets_overlay(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(STORAGE_DRIVER_ENV, raising=False)
    calls = tmp_path / "calls"
    _buildah_on_path(tmp_path, monkeypatch, f'echo "$@" >> {calls}; exit 0')
    root = tmp_path / "store"
    assert storage_driver(root) == "overlay"
    assert storage_driver(root) == "overlay"
    (probe,) = calls.read_text().splitlines()  # checked once per store
    assert f"--root {root}/storage-overlay" in probe
    assert probe.endswith("--storage-driver overlay info")


def test_the_driver_named_in_the_environment_is_used_without_a_check(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _buildah_on_path(tmp_path, monkeypatch, "exit 99")
    monkeypatch.setenv(STORAGE_DRIVER_ENV, "vfs")
    assert storage_driver(tmp_path / "a") == "vfs"
    monkeypatch.setenv(STORAGE_DRIVER_ENV, "overlay")
    assert storage_driver(tmp_path / "b") == "overlay"


def test_a_driver_the_tier_does_not_use_is_refused_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(STORAGE_DRIVER_ENV, "btrfs")
    with pytest.raises(ValueError, match=rf"{STORAGE_DRIVER_ENV}='btrfs'.*overlay, vfs"):
        storage_driver(tmp_path)


def test_each_driver_has_its_own_store(tmp_path: Path) -> None:
    overlay = Buildah(tmp_path, driver="overlay").command("images")
    vfs = Buildah(tmp_path, driver="vfs").command("images")
    assert overlay[:7] == [
        "buildah", "--root", f"{tmp_path}/storage-overlay", "--runroot",
        f"{tmp_path}/run-overlay", "--storage-driver", "overlay",
    ]  # fmt: skip
    assert vfs[:7] == [
        "buildah", "--root", f"{tmp_path}/storage-vfs", "--runroot", f"{tmp_path}/run-vfs",
        "--storage-driver", "vfs",
    ]  # fmt: skip
