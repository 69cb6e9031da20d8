"""Builders for the `status` of a pod at each step of its life, shaped like the kubelet's.

Only the first container runs a process; any others report the same state, so the statuses
stay internally consistent without pretending to run sidecars.
"""

from __future__ import annotations

import hashlib
from typing import Any

__all__ = [
    "NODE_NAME",
    "initial_status",
    "running",
    "scheduled",
    "set_condition",
    "terminated",
    "unschedulable",
    "waiting",
]

NODE_NAME = "gke-sim-default-pool-0"
HOST_IP = "10.128.0.2"


def _qos_class(pod: dict[str, Any]) -> str:
    containers = pod["spec"].get("containers") or []
    resources = [c.get("resources") or {} for c in containers]
    if not any(r.get("limits") or r.get("requests") for r in resources):
        return "BestEffort"
    guaranteed = all(
        (r.get("limits") or {}).get(k) is not None
        and (r.get("requests") or {}).get(k, (r.get("limits") or {}).get(k)) == r["limits"][k]
        for r in resources
        for k in ("cpu", "memory")
    )
    return "Guaranteed" if guaranteed else "Burstable"


def initial_status(pod: dict[str, Any]) -> dict[str, Any]:
    """What the API server stores for a freshly created pod."""
    return {"phase": "Pending", "qosClass": _qos_class(pod)}


def set_condition(
    conditions: list[dict[str, Any]],
    kind: str,
    status: str,
    now: str,
    reason: str | None = None,
    message: str | None = None,
) -> list[dict[str, Any]]:
    """A copy of `conditions` with `kind` set; the transition time moves only on a change."""
    out = [dict(c) for c in conditions]
    for cond in out:
        if cond["type"] == kind:
            if cond["status"] != status:
                cond["lastTransitionTime"] = now
            cond["status"] = status
            _set_optional(cond, reason, message)
            return out
    cond = {"type": kind, "status": status, "lastProbeTime": None, "lastTransitionTime": now}
    _set_optional(cond, reason, message)
    out.append(cond)
    return out


def _set_optional(cond: dict[str, Any], reason: str | None, message: str | None) -> None:
    for key, value in (("reason", reason), ("message", message)):
        if value is None:
            cond.pop(key, None)
        else:
            cond[key] = value


def unschedulable(status: dict[str, Any], message: str, now: str) -> dict[str, Any]:
    """Pending and not placed: the scheduler's verdict."""
    conds = set_condition(
        status.get("conditions") or [], "PodScheduled", "False", now, "Unschedulable", message
    )
    return {**status, "phase": "Pending", "conditions": conds}


def scheduled(status: dict[str, Any], now: str) -> dict[str, Any]:
    """Pending but bound to a node."""
    conds = set_condition(status.get("conditions") or [], "PodScheduled", "True", now)
    return {
        **status,
        "phase": "Pending",
        "conditions": conds,
        "hostIP": HOST_IP,
        "hostIPs": [{"ip": HOST_IP}],
    }


def _container_id(pod: dict[str, Any], name: str, restart: int) -> str:
    digest = hashlib.sha256(f"{pod['metadata']['uid']}/{name}/{restart}".encode()).hexdigest()
    return f"containerd://{digest}"


def _image_id(image: str) -> str:
    repo = image.split("@", 1)[0]
    if ":" in repo.rsplit("/", 1)[-1]:  # drop the tag, not a registry's port
        repo = repo.rsplit(":", 1)[0]
    return f"{repo}@sha256:{hashlib.sha256(image.encode()).hexdigest()}"


def _statuses(
    pod: dict[str, Any],
    state: dict[str, Any],
    *,
    ready: bool,
    started: bool,
    restarts: int,
    last_state: dict[str, Any] | None = None,
) -> list[dict[str, Any]]:
    out = []
    for container in pod["spec"]["containers"]:
        image = str(container.get("image", ""))
        entry: dict[str, Any] = {
            "name": container["name"],
            "image": image,
            "imageID": _image_id(image) if started or "terminated" in state else "",
            "ready": ready,
            "started": started,
            "restartCount": restarts,
            "state": state,
            "lastState": last_state or {},
        }
        if "waiting" not in state:
            entry["containerID"] = _container_id(pod, container["name"], restarts)
        out.append(entry)
    return out


def _readiness(
    status: dict[str, Any], pod: dict[str, Any], ready: bool, now: str, reason: str | None
) -> list[dict[str, Any]]:
    names = [c["name"] for c in pod["spec"]["containers"]]
    msg = None if ready else f"containers with unready status: [{' '.join(names)}]"
    why = None if ready else reason
    flag = "True" if ready else "False"
    conds = status.get("conditions") or []
    conds = set_condition(conds, "PodReadyToStartContainers", "True", now)
    conds = set_condition(conds, "Initialized", "True", now)
    conds = set_condition(conds, "Ready", flag, now, why, msg)
    conds = set_condition(conds, "ContainersReady", flag, now, why, msg)
    return set_condition(conds, "PodScheduled", "True", now)


def waiting(
    pod: dict[str, Any],
    status: dict[str, Any],
    reason: str,
    message: str | None,
    now: str,
    restarts: int = 0,
    last_state: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Pending (or restarting) with every container waiting for `reason`."""
    state: dict[str, Any] = {"waiting": {"reason": reason}}
    if message:
        state["waiting"]["message"] = message
    return {
        **status,
        "conditions": _readiness(status, pod, False, now, "ContainersNotReady"),
        "containerStatuses": _statuses(
            pod, state, ready=False, started=False, restarts=restarts, last_state=last_state
        ),
    }


def running(
    pod: dict[str, Any],
    status: dict[str, Any],
    started_at: str,
    now: str,
    pod_ip: str,
    restarts: int = 0,
    last_state: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Running and ready."""
    state = {"running": {"startedAt": started_at}}
    return {
        **status,
        "phase": "Running",
        "conditions": _readiness(status, pod, True, now, None),
        "podIP": pod_ip,
        "podIPs": [{"ip": pod_ip}],
        "startTime": status.get("startTime") or started_at,
        "containerStatuses": _statuses(
            pod, state, ready=True, started=True, restarts=restarts, last_state=last_state
        ),
    }


def terminated(
    pod: dict[str, Any],
    status: dict[str, Any],
    *,
    exit_code: int,
    reason: str,
    started_at: str | None,
    now: str,
    phase: str,
    message: str | None = None,
    restarts: int = 0,
    last_state: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The container finished (or was killed); the pod takes `phase`."""
    term: dict[str, Any] = {
        "exitCode": exit_code,
        "reason": reason,
        "startedAt": started_at or now,
        "finishedAt": now,
        "containerID": _container_id(pod, pod["spec"]["containers"][0]["name"], restarts),
    }
    if message:
        term["message"] = message
    out = {
        **status,
        "phase": phase,
        "conditions": _readiness(status, pod, False, now, "PodCompleted"),
        "startTime": status.get("startTime") or started_at or now,
        "containerStatuses": _statuses(
            pod,
            {"terminated": term},
            ready=False,
            started=False,
            restarts=restarts,
            last_state=last_state,
        ),
    }
    if phase in ("Succeeded", "Failed"):
        out["conditions"] = set_condition(
            out["conditions"], "PodReadyToStartContainers", "False", now
        )
    return out
