"""Regenerate the JobSet manifest that ``kinetic up`` installs, and check its pin.

The file ``packages/kinetic-gke/src/kinetic_gke/provision/data/jobset-<version>.yaml`` ships
inside the ``kinetic-gke`` package, so installing JobSet needs no download. It is rendered here
the way the JobSet project renders its release manifest (``make artifacts``: ``kustomize build
config/default``, the controller image being the promoted ``registry.k8s.io/jobset/jobset:
<version>``, where the module's own kustomization still names the staging registry), from
sources fetched through the Go module proxy only:

- the module ``sigs.k8s.io/jobset@<version>``, at the version the test control plane builds its
  JobSet controller from (``kinetic_testing.controlplane.versions.PINS.jobset``), so the
  manifest Kinetic ships is the one its tests run;
- kustomize at the version JobSet's own Makefile pins (``KUSTOMIZE_VERSION``), built with the
  local Go toolchain.

Rendering is deterministic: the same pins give the same bytes, whose sha256 is pinned beside
the file name in ``kinetic_gke.provision.manifests.JOBSET``; ``kinetic up`` applies nothing else.

    uv run python tools/jobset_manifest.py           # write the file, print its sha256
    uv run python tools/jobset_manifest.py --check   # exit 1 unless a fresh render, the shipped
                                                     # file and the pinned sha256 all agree
"""

import tempfile
from pathlib import Path

from kustomize_render import kustomize, main, module_config, run

from kinetic_gke.provision.manifests import JOBSET
from kinetic_testing.controlplane.versions import PINS

KUSTOMIZE = "v5.2.1"
"""``KUSTOMIZE_VERSION`` in the Makefile of JobSet v0.11.1."""
IMAGE = "registry.k8s.io/jobset/jobset"


def render(version: str) -> bytes:
    """The release manifest of JobSet ``version``, rendered from its module's sources."""
    with tempfile.TemporaryDirectory(prefix="jobset-manifest-") as scratch:
        work = Path(scratch)
        binary = kustomize(KUSTOMIZE, work)
        config = module_config("sigs.k8s.io/jobset", version, work)
        run(binary, "edit", "set", "image", f"controller={IMAGE}:{version}",
            cwd=config / "components" / "manager")  # fmt: skip
        return run(binary, "build", str(config / "default"))


if __name__ == "__main__":
    main(__doc__, JOBSET, PINS.jobset, render, version_source="the test control plane runs")
