"""Regenerate the LeaderWorkerSet manifest that ``kinetic up`` installs, and check its pin.

The file ``packages/kinetic/src/kinetic/provision/data/lws-<version>.yaml`` ships inside the
``kinetic`` package, so installing LeaderWorkerSet needs no download. It is rendered here the
way the LWS project renders its release manifest (``make artifacts``: ``kustomize build
config/default`` after setting the controller image to ``registry.k8s.io/lws/lws:<version>``),
from sources fetched through the Go module proxy only:

- the module ``sigs.k8s.io/lws@<version>``, at the version the test control plane builds its
  LWS controller from (``kinetic_testing.controlplane.versions.PINS.lws``), so the manifest
  Kinetic ships is the one its tests run;
- kustomize at the version LWS's own Makefile pins, built with the local Go toolchain.

Rendering is deterministic: the same pins give the same bytes, whose sha256 is pinned beside
the file name in ``kinetic_gke.provision.manifests.LWS``; ``kinetic up`` applies nothing else.

    uv run python tools/lws_manifest.py           # write the file, print its sha256
    uv run python tools/lws_manifest.py --check   # exit 1 unless a fresh render, the shipped
                                                  # file and the pinned sha256 all agree
"""

import argparse
import hashlib
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from kinetic_gke.provision.manifests import LWS
from kinetic_testing.controlplane.build import go_environment, go_toolchain
from kinetic_testing.controlplane.versions import PINS, cache_root

KUSTOMIZE = "v5.2.1"
"""``KUSTOMIZE_VERSION`` in the Makefile of LWS v0.8.0."""
IMAGE = "registry.k8s.io/lws/lws"
DATA = Path(__file__).resolve().parents[1] / "packages/kinetic/src/kinetic/provision/data"


def _go(go: str, args: list[str], cwd: Path, env: dict[str, str]) -> str:
    done = subprocess.run(
        [go, *args], cwd=cwd, env=env, capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        sys.exit(
            f"`go {' '.join(args)}` failed (is the Go module proxy reachable?):\n{done.stderr}"
        )
    return done.stdout


def render(version: str) -> bytes:
    """The release manifest of LWS ``version``, rendered from its module's sources."""
    go, root = go_toolchain(), cache_root()
    env = go_environment(root)
    tools = root / "tools" / f"kustomize-{KUSTOMIZE}"
    kustomize = tools / "kustomize"
    with tempfile.TemporaryDirectory(prefix="lws-manifest-") as scratch:
        work = Path(scratch)
        if not kustomize.is_file():
            _go(
                go,
                ["install", f"sigs.k8s.io/kustomize/kustomize/v5@{KUSTOMIZE}"],
                work,
                {**env, "GOBIN": str(tools)},
            )
        module = json.loads(
            _go(go, ["mod", "download", "-json", f"sigs.k8s.io/lws@{version}"], work, env)
        )
        config = work / "config"
        shutil.copytree(Path(module["Dir"]) / "config", config)
        for path in [config, *config.rglob("*")]:  # the module cache is read-only
            path.chmod(path.stat().st_mode | 0o200)
        image = f"controller={IMAGE}:{version}"
        subprocess.run(
            [kustomize, "edit", "set", "image", image], cwd=config / "manager", check=True
        )
        built = subprocess.run(
            [kustomize, "build", str(config / "default")], capture_output=True, check=True
        )
    return built.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare only; write nothing")
    check = parser.parse_args().check
    if LWS.version != PINS.lws:
        sys.exit(
            f"kinetic pins LWS {LWS.version} but the test control plane runs {PINS.lws}; "
            "make them agree first."
        )
    data = render(PINS.lws)
    digest = hashlib.sha256(data).hexdigest()
    target = DATA / LWS.packaged
    problems = []
    if check:
        if not target.is_file() or target.read_bytes() != data:
            problems.append(f"{target} differs from a fresh render (run without --check)")
    else:
        target.write_bytes(data)
        print(f"wrote {target} ({len(data)} bytes)")
    if digest != LWS.sha256:
        problems.append(
            f"the pinned sha256 is {LWS.sha256 or '(none)'}; set it to {digest} in "
            "packages/kinetic/src/kinetic/provision/manifests.py"
        )
    print(f"sha256 {digest}")
    if problems:
        sys.exit("\n".join(problems))


if __name__ == "__main__":
    main()
