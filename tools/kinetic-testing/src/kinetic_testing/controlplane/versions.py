"""The pinned versions of the real control plane, and the cache directory they are built into.

Bumping a version here changes the cache key, so the next run builds afresh.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "JOB_POD_FAILURE_BACKOFF_S",
    "PINS",
    "Pins",
    "bin_dir",
    "cache_root",
    "jobset_dir",
    "kueue_dir",
]

CACHE_ENV = "KINETIC_K8S_CACHE"
JOB_POD_FAILURE_BACKOFF_S = 1
"""The Job controller's first wait before a failed pod's replacement, in the built
kube-controller-manager (upstream: 10 s, doubling to 10 min)."""


@dataclass(frozen=True)
class Pins:
    kubernetes: str = "v1.36.3"
    etcd: str = "v3.6.8"
    lws: str = "v0.8.0"
    kueue: str = "v0.17.0"
    """Built into a directory of its own (:func:`kueue_dir`): adding or bumping it leaves the
    rest of the plane's build in place."""
    jobset: str = "v0.11.1"
    """Built into a directory of its own too (:func:`jobset_dir`)."""

    @property
    def staging(self) -> str:
        """The tag of k8s.io staging modules (api, client-go...) matching `kubernetes`."""
        return "v0." + self.kubernetes.removeprefix("v1.")

    @property
    def minor(self) -> str:
        return self.kubernetes.removeprefix("v1.").split(".")[0]

    @property
    def key(self) -> str:
        text = f"k8s={self.kubernetes} etcd={self.etcd} lws={self.lws}"
        text += f" job-backoff={JOB_POD_FAILURE_BACKOFF_S}s"  # the build's own KCM main
        return hashlib.sha256(text.encode()).hexdigest()[:12]

    def describe(self) -> str:
        return f"kubernetes {self.kubernetes}, etcd {self.etcd}, lws {self.lws}"

    @property
    def kueue_key(self) -> str:
        # The build patches two of Kueue's files (kueue_build.py): its revision is in the key.
        text = f"kueue={self.kueue} patch=1"
        return hashlib.sha256(text.encode()).hexdigest()[:12]

    @property
    def jobset_key(self) -> str:
        return hashlib.sha256(f"jobset={self.jobset}".encode()).hexdigest()[:12]


PINS = Pins()


def cache_root() -> Path:
    """`$KINETIC_K8S_CACHE`, else `kinetic/k8s-control-plane` in the XDG cache directory."""
    override = os.environ.get(CACHE_ENV)
    if override:
        return Path(override).expanduser().absolute()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "kinetic" / "k8s-control-plane"


def bin_dir(pins: Pins = PINS) -> Path:
    """Where the binaries of one set of pins live: keyed by the pins, so bumps never mix."""
    return cache_root() / f"bin-{pins.key}"


def kueue_dir(pins: Pins = PINS) -> Path:
    """Where the Kueue controller of one set of pins, its CRDs and webhooks live."""
    return cache_root() / f"kueue-{pins.kueue_key}"


def jobset_dir(pins: Pins = PINS) -> Path:
    """Where the JobSet controller of one set of pins, its CRD and webhooks live."""
    return cache_root() / f"jobset-{pins.jobset_key}"
