"""Build Kueue's controller manager from its Go module, with two files patched to run outside a
container, and keep its CRDs and webhook manifest beside it.

Kueue v0.17.0 reads its metrics and visibility serving certificates from fixed absolute paths
(``/etc/kueue/metrics/certs``, ``/visibility``) when its internal certificate management is off.
A build cannot patch the module cache (``go build -overlay`` refuses it), so a wrapper module
holds copies of ``cmd/kueue/main.go`` and ``pkg/visibility/server.go`` that take those
directories from ``KUEUE_METRICS_CERT_DIR`` and ``KUEUE_VISIBILITY_CERT_DIR``. Each edit is an
exact replacement that must match once, so a version whose sources moved fails the build
loudly instead of running unpatched.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

from .versions import Pins

__all__ = ["CRDS", "KUEUE_BINARY", "PROVISIONING_CRD", "WEBHOOKS", "build_kueue", "kueue_ready"]

KUEUE_BINARY = "kueue-controller"
CRDS = "crds"
"""The directory of Kueue's CRDs (and the ProvisioningRequest CRD its admission check needs)."""
WEBHOOKS = "webhooks.yaml"
PROVISIONING_CRD = "autoscaling.x-k8s.io_provisioningrequests.yaml"
_MAIN = "cmd/kueue/main.go"
_VISIBILITY = "pkg/visibility/server.go"
_WRAPPER = "kinetic.test/kueue-patched"

GoRunner = Callable[[list[str], Path, str], str]
"""Runs ``go ARGS`` in a directory, logging under a step name; returns its stdout."""


def kueue_ready(directory: Path) -> bool:
    """Whether ``directory`` holds a finished Kueue build."""
    return (directory / "VERSIONS").is_file() and (directory / KUEUE_BINARY).is_file()


def build_kueue(go: GoRunner, sources: Path, modules: Path, out: Path, pins: Pins) -> None:
    """Build Kueue ``pins.kueue`` into ``out`` (binary, CRDs, webhooks), using ``sources`` as
    the scratch directory of its wrapper modules and ``modules`` as the Go module cache."""
    upstream = sources / "upstream"
    upstream.mkdir(parents=True, exist_ok=True)
    (upstream / "go.mod").write_text(
        f"module kinetic.test/kueue\n\ngo 1.25.0\n\nrequire sigs.k8s.io/kueue {pins.kueue}\n\n"
        "tool sigs.k8s.io/kueue/cmd/kueue\n"
    )
    go(["mod", "tidy"], upstream, "kueue")
    module = modules / f"sigs.k8s.io/kueue@{pins.kueue}"

    patched = sources / "patched"
    shutil.rmtree(patched, ignore_errors=True)
    (patched / "visibility").mkdir(parents=True)
    tidy = (upstream / "go.mod").read_text()
    (patched / "go.mod").write_text(
        tidy.replace("module kinetic.test/kueue", f"module {_WRAPPER}", 1).replace(
            "tool sigs.k8s.io/kueue/cmd/kueue\n", ""
        )
    )
    shutil.copyfile(upstream / "go.sum", patched / "go.sum")
    (patched / "main.go").write_text(_patched_main((module / _MAIN).read_text()))
    (patched / "visibility" / "server.go").write_text(
        _patched_visibility((module / _VISIBILITY).read_text())
    )
    go(
        [
            "build",
            f"-ldflags=-s -w -X sigs.k8s.io/kueue/pkg/version.GitVersion={pins.kueue}",
            "-o",
            str(out / KUEUE_BINARY),
            ".",
        ],
        patched,
        "kueue",
    )
    crds = out / CRDS
    crds.mkdir()
    for crd in sorted((module / "config/components/crd/bases").glob("*.yaml")):
        shutil.copyfile(crd, crds / crd.name)
    autoscaler = next(modules.glob("k8s.io/autoscaler/cluster-autoscaler/apis@*/config/crd"))
    shutil.copyfile(autoscaler / PROVISIONING_CRD, crds / PROVISIONING_CRD)
    shutil.copyfile(module / "config/components/webhook/manifests.yaml", out / WEBHOOKS)
    (out / "VERSIONS").write_text(f"kueue {pins.kueue} (patched: certificate directories)\n")


def _replace_once(text: str, old: str, new: str, where: str) -> str:
    if text.count(old) != 1:
        raise RuntimeError(
            f"Kueue's {where} no longer has exactly one {old!r}: the patch that lets it run "
            "outside a container needs updating for this version."
        )
    return text.replace(old, new)


def _patched_main(source: str) -> str:
    source = _replace_once(
        source, '"sigs.k8s.io/kueue/pkg/visibility"', f'"{_WRAPPER}/visibility"', _MAIN
    )
    return _replace_once(
        source,
        'metricsCertPath := "/etc/kueue/metrics/certs"\n',
        'metricsCertPath := "/etc/kueue/metrics/certs"\n'
        '\t\tif dir := os.Getenv("KUEUE_METRICS_CERT_DIR"); dir != "" {\n'
        "\t\t\tmetricsCertPath = dir\n\t\t}\n",
        _MAIN,
    )


def _patched_visibility(source: str) -> str:
    source = _replace_once(source, '\tcertDir = "/visibility"\n', "", _VISIBILITY)
    context = 'import (\n\t"context"\n'
    source = _replace_once(source, context, context + '\t"os"\n', _VISIBILITY)
    return source + (
        "\n// certDir is where the visibility server's certificate is: $KUEUE_VISIBILITY_CERT_DIR,"
        "\n// else Kueue's own fixed path.\nfunc certDirectory() string {\n"
        '\tif dir := os.Getenv("KUEUE_VISIBILITY_CERT_DIR"); dir != "" {\n\t\treturn dir\n\t}\n'
        '\treturn "/visibility"\n}\n\nvar certDir = certDirectory()\n'
    )
