"""What the kubelet role remembers about one pod between reconcile passes."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import statuses as st
from .api import Obj
from .processes import PodProcess

__all__ = ["PodRuntime", "container_names"]


@dataclass(eq=False)
class PodRuntime:
    """What the kubelet remembers about one pod (by uid)."""

    pod: Obj
    node: str
    directory: Path
    log_path: Path
    pod_ip: str
    process: PodProcess | None = None
    started_at: str | None = None
    started_mono: float = 0.0
    restarts: int = 0
    last_state: Obj | None = None
    retry_at: float = 0.0
    waiting_since: float = 0.0
    waiting_reason: str | None = None
    outcome: st.Outcome | None = None
    finished: bool = False
    confirmed: bool = False
    image_container: Any = None
    """The pod's working container (``kinetic_testing.images.pods.PodContainer``) when it runs
    in a locally built image."""
    admitted_mono: float = field(default_factory=time.monotonic)
    """When this kubelet took the pod on (its ``status.startTime``): what
    ``activeDeadlineSeconds`` counts from, image pull included."""

    @property
    def key(self) -> tuple[str, str]:
        return self.pod["metadata"]["namespace"], self.pod["metadata"]["name"]

    def alive(self) -> bool:
        return self.process is not None and self.process.exit_code is None


def container_names(pod: Obj) -> list[str]:
    return [c["name"] for c in pod["spec"].get("containers") or []]
