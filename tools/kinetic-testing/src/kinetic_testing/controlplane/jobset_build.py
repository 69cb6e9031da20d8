"""Build the JobSet controller from its Go module, and keep its CRD and webhook manifest beside it.

JobSet's main package is its module root (``sigs.k8s.io/jobset``); unlike Kueue it runs outside
a container as shipped (every certificate directory comes from its configuration), so a
wrapper module that names it as a tool is all the build needs.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from .kueue_build import GoRunner
from .versions import Pins

__all__ = ["JOBSET_BINARY", "JOBSET_CRD", "JOBSET_WEBHOOKS", "build_jobset", "jobset_ready"]

JOBSET_BINARY = "jobset-controller"
JOBSET_CRD = "jobset.x-k8s.io_jobsets.yaml"
JOBSET_WEBHOOKS = "webhooks.yaml"


def jobset_ready(directory: Path) -> bool:
    """Whether ``directory`` holds a finished JobSet build."""
    return all((directory / name).is_file() for name in ("VERSIONS", JOBSET_BINARY, JOBSET_CRD))


def build_jobset(go: GoRunner, sources: Path, modules: Path, out: Path, pins: Pins) -> None:
    """Build JobSet ``pins.jobset`` into ``out`` (binary, CRD, webhooks), using ``sources`` as
    its wrapper module's directory and ``modules`` as the Go module cache."""
    sources.mkdir(parents=True, exist_ok=True)
    (sources / "go.mod").write_text(
        f"module kinetic.test/jobset\n\ngo 1.25.0\n\nrequire sigs.k8s.io/jobset {pins.jobset}\n\n"
        "tool sigs.k8s.io/jobset\n"
    )
    go(["mod", "tidy"], sources, "jobset")
    go(
        [
            "build",
            f"-ldflags=-s -w -X sigs.k8s.io/jobset/pkg/version.GitVersion={pins.jobset}",
            "-o",
            str(out / JOBSET_BINARY),
            "sigs.k8s.io/jobset",
        ],
        sources,
        "jobset",
    )
    config = modules / f"sigs.k8s.io/jobset@{pins.jobset}" / "config" / "components"
    shutil.copyfile(config / "crd" / "bases" / JOBSET_CRD, out / JOBSET_CRD)
    shutil.copyfile(config / "webhook" / "manifests.yaml", out / JOBSET_WEBHOOKS)
    (out / "VERSIONS").write_text(f"jobset {pins.jobset}\n")
