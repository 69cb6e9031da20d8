"""Regenerate the Kueue manifest that ``kinetic up`` installs, and check its pin.

The file ``packages/kinetic-gke/src/kinetic_gke/provision/data/kueue-<version>.yaml`` ships
inside the ``kinetic-gke`` package, so installing Kueue needs no download. It is rendered here
the way Kueue renders its release manifest (``make artifacts``: ``kustomize build
config/default`` after ``prepare-manifests`` sets the controller image to
``registry.k8s.io/kueue/kueue:<version>``), from sources fetched through the Go module proxy
only:

- the module ``sigs.k8s.io/kueue@<version>``, at the version Kinetic speaks
  (``kinetic_gke.k8s.kueue_api.KUEUE_VERSION``), the one its tests run;
- kustomize at the version Kueue's tool module (``hack/tools/go.mod``, not part of the module
  archive) pins for that release, built with the local Go toolchain.

Nothing is patched: the manager configuration upstream ships (a ConfigMap) already enables the
integrations Kinetic's workloads need (``batch/job``, ``jobset.x-k8s.io/jobset`` and
``leaderworkerset.x-k8s.io/leaderworkerset``), and the render stops if a release drops one.

Rendering is deterministic: the same pins give the same bytes, whose sha256 is pinned beside
the file name in ``kinetic_gke.provision.manifests.KUEUE``; ``kinetic up`` applies nothing else.

    uv run python tools/kueue_manifest.py           # write the file, print its sha256
    uv run python tools/kueue_manifest.py --check   # exit 1 unless a fresh render, the shipped
                                                    # file and the pinned sha256 all agree
"""

import sys
import tempfile
from pathlib import Path

import yaml  # type: ignore[import-untyped]
from kustomize_render import kustomize, main, module_config, run

from kinetic_gke.k8s.kueue_api import KUEUE_VERSION
from kinetic_gke.provision.manifests import KUEUE

KUSTOMIZE = "v5.8.1"
"""``sigs.k8s.io/kustomize/kustomize/v5`` in Kueue v0.17.0's ``hack/tools/go.mod``."""
IMAGE = "registry.k8s.io/kueue/kueue"
NEEDED_FRAMEWORKS = (
    "batch/job",
    "jobset.x-k8s.io/jobset",
    "leaderworkerset.x-k8s.io/leaderworkerset",
)


def render(version: str) -> bytes:
    """The release manifest of Kueue ``version``, rendered from its module's sources."""
    with tempfile.TemporaryDirectory(prefix="kueue-manifest-") as scratch:
        work = Path(scratch)
        binary = kustomize(KUSTOMIZE, work)
        config = module_config("sigs.k8s.io/kueue", version, work)
        run(binary, "edit", "set", "image", f"controller={IMAGE}:{version}",
            cwd=config / "components" / "manager")  # fmt: skip
        return run(binary, "build", str(config / "default"))


def frameworks(data: bytes) -> list[str]:
    """The integrations the manager configuration inside the manifest enables."""
    for document in yaml.safe_load_all(data):
        if document and document.get("kind") == "ConfigMap":
            for text in (document.get("data") or {}).values():
                config = yaml.safe_load(text)
                if isinstance(config, dict) and config.get("kind") == "Configuration":
                    return list((config.get("integrations") or {}).get("frameworks") or [])
    sys.exit("the rendered manifest holds no Kueue Configuration")


def vet(data: bytes) -> None:
    """Stop unless the manager configuration enables every integration Kinetic needs."""
    missing = [name for name in NEEDED_FRAMEWORKS if name not in frameworks(data)]
    if missing:
        sys.exit(f"Kueue {KUEUE_VERSION}'s manager configuration does not enable "
                 f"{', '.join(missing)}; patch it here before shipping the manifest.")  # fmt: skip


if __name__ == "__main__":
    main(__doc__, KUEUE, KUEUE_VERSION, render, version_source="Kinetic speaks", vet=vet)
