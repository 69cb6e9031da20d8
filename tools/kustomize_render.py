"""Render a Kubernetes project's release manifest from its Go module, as its Makefile does.

Shared by ``tools/lws_manifest.py``, ``tools/kueue_manifest.py`` and
``tools/jobset_manifest.py``, whose command line is :func:`main`: the module is fetched through
the Go module proxy (``go mod download``), its ``config`` tree copied somewhere writable, and
kustomize, at the version the project's own tooling pins, built once with the local Go
toolchain into the test control plane's cache. The same pins give the same bytes.
"""

import argparse
import hashlib
import json
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from kinetic_gke.provision.manifests import PinnedManifest
from kinetic_testing.controlplane.build import go_environment, go_toolchain
from kinetic_testing.controlplane.versions import cache_root

DATA = Path(__file__).resolve().parents[1] / "packages/kinetic-gke/src/kinetic_gke/provision/data"
PINS_FILE = "packages/kinetic-gke/src/kinetic_gke/provision/manifests.py"


def go(args: list[str], cwd: Path, **extra_env: str) -> str:
    """``go ARGS`` with the control plane's Go environment; exits naming the command on failure."""
    env = {**go_environment(cache_root()), **extra_env}
    done = subprocess.run(
        [go_toolchain(), *args], cwd=cwd, env=env, capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        sys.exit(
            f"`go {' '.join(args)}` failed (is the Go module proxy reachable?):\n{done.stderr}"
        )
    return done.stdout


def kustomize(version: str, scratch: Path) -> Path:
    """The kustomize binary of ``version``, built from its module the first time."""
    tools = cache_root() / "tools" / f"kustomize-{version}"
    binary = tools / "kustomize"
    if not binary.is_file():
        go(["install", f"sigs.k8s.io/kustomize/kustomize/v5@{version}"], scratch,
           GOBIN=str(tools))  # fmt: skip
    return binary


def module_config(module: str, version: str, scratch: Path) -> Path:
    """A writable copy of ``config/`` of the Go module ``module@version`` under ``scratch``."""
    found = json.loads(go(["mod", "download", "-json", f"{module}@{version}"], scratch))
    config = scratch / "config"
    shutil.copytree(Path(found["Dir"]) / "config", config)
    for path in [config, *config.rglob("*")]:  # the module cache is read-only
        path.chmod(path.stat().st_mode | 0o200)
    return config


def run(binary: Path, *args: str, cwd: Path | None = None) -> bytes:
    done = subprocess.run([binary, *args], cwd=cwd, capture_output=True, check=False)
    if done.returncode != 0:
        sys.exit(f"`kustomize {' '.join(args)}` failed:\n{done.stderr.decode()}")
    return done.stdout


def write_or_check(pin: PinnedManifest, data: bytes, *, check: bool) -> None:
    """Write ``data`` as ``pin``'s shipped file (``check``: only compare with it), print its
    sha256, and exit 1 if the file or the pinned sha256 disagree with it."""
    digest = hashlib.sha256(data).hexdigest()
    target = DATA / pin.packaged
    problems = []
    if check:
        if not target.is_file() or target.read_bytes() != data:
            problems.append(f"{target} differs from a fresh render (run without --check)")
    else:
        target.write_bytes(data)
        print(f"wrote {target} ({len(data)} bytes)")
    if digest != pin.sha256:
        problems.append(
            f"the pinned sha256 of {pin.name} is {pin.sha256 or '(none)'}; set it to {digest} "
            f"in {PINS_FILE}"
        )
    print(f"sha256 {digest}")
    if problems:
        sys.exit("\n".join(problems))


def main(
    doc: str,
    pin: PinnedManifest,
    version: str,
    render: Callable[[str], bytes],
    *,
    version_source: str,
    vet: Callable[[bytes], None] = lambda data: None,
) -> None:
    """A manifest tool's command line (``doc``: its docstring): render ``pin``'s project at
    ``version`` (what ``version_source`` runs or speaks), ``vet`` the bytes, and write them as
    the shipped file, or with ``--check`` only compare."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare only; write nothing")
    check = parser.parse_args().check
    if pin.version != version:
        sys.exit(
            f"kinetic pins {pin.name} {pin.version} but {version_source} {version}; make them "
            "agree first."
        )
    data = render(version)
    vet(data)
    write_or_check(pin, data, check=check)
