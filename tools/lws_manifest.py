"""Regenerate the LeaderWorkerSet manifest that ``kinetic up`` installs, and check its pin.

The file ``packages/kinetic-gke/src/kinetic_gke/provision/data/lws-<version>.yaml`` ships
inside the ``kinetic-gke`` package, so installing LeaderWorkerSet needs no download. It is
rendered here the way the LWS project renders its release manifest (``make artifacts``:
``kustomize build config/default`` after setting the controller image to
``registry.k8s.io/lws/lws:<version>``), from sources fetched through the Go module proxy only:

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

import tempfile
from pathlib import Path

from kustomize_render import kustomize, main, module_config, run

from kinetic_gke.provision.manifests import LWS
from kinetic_testing.controlplane.versions import PINS

KUSTOMIZE = "v5.2.1"
"""``KUSTOMIZE_VERSION`` in the Makefile of LWS v0.8.0."""
IMAGE = "registry.k8s.io/lws/lws"


def render(version: str) -> bytes:
    """The release manifest of LWS ``version``, rendered from its module's sources."""
    with tempfile.TemporaryDirectory(prefix="lws-manifest-") as scratch:
        work = Path(scratch)
        binary = kustomize(KUSTOMIZE, work)
        config = module_config("sigs.k8s.io/lws", version, work)
        run(binary, "edit", "set", "image", f"controller={IMAGE}:{version}", cwd=config / "manager")
        return run(binary, "build", str(config / "default"))


if __name__ == "__main__":
    main(__doc__, LWS, PINS.lws, render, version_source="the test control plane runs")
