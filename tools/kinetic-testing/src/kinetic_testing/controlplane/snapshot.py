"""What a test's namespace held when the test failed: one line per object, for its report.

A failure of this tier under load is a defect to find, and the control plane's component logs
alone rarely say which pod, Job or LeaderWorkerSet was stuck. This reads the namespace once, as
the admin user, before the namespace is deleted, and never raises: a snapshot that cannot be
taken says why instead.
"""

from __future__ import annotations

from typing import Any, Protocol

__all__ = ["namespace_snapshot"]

_LWS = "/apis/leaderworkerset.x-k8s.io/v1/namespaces/{ns}/leaderworkersets"
_EVENTS_SHOWN = 40
_LOG_LINES = 8


class _Readable(Protocol):
    """What the snapshot needs of a cluster (``ControlPlane`` has it)."""

    def request(self, method: str, path: str) -> Any: ...

    def get_text(self, path: str) -> str: ...


def namespace_snapshot(plane: _Readable, namespace: str) -> str:
    sections = [
        ("Jobs", f"/apis/batch/v1/namespaces/{namespace}/jobs", _job_line),
        ("LeaderWorkerSets", _LWS.format(ns=namespace), _lws_line),
        ("Pods", f"/api/v1/namespaces/{namespace}/pods", _pod_line),
        ("Events", f"/api/v1/namespaces/{namespace}/events", _event_line),
    ]
    lines = [f"namespace {namespace}:"]
    for title, path, describe in sections:
        try:
            items = (plane.request("GET", path) or {}).get("items") or []
        except Exception as error:  # a report must not fail the hook
            lines.append(f"{title}: could not list ({type(error).__name__}: {error})")
            continue
        if title == "Events":
            items = sorted(items, key=_event_time)[-_EVENTS_SHOWN:]
        lines.append(f"{title} ({len(items)}):")
        for item in items:
            lines.append(f"  {describe(item)}")
            if title == "Pods":
                lines.extend(f"    | {line}" for line in _log_tail(plane, namespace, item))
    return "\n".join(lines)


def _log_tail(plane: _Readable, namespace: str, pod: dict[str, Any]) -> list[str]:
    """The pod's last lines, through the API server (from its node's log server)."""
    name = (pod.get("metadata") or {}).get("name")
    if not (pod.get("spec") or {}).get("nodeName"):
        return []
    try:
        text = plane.get_text(
            f"/api/v1/namespaces/{namespace}/pods/{name}/log?tailLines={_LOG_LINES}"
        )
    except Exception as error:  # a report must not fail the hook
        return [f"(no log: {type(error).__name__}: {error})"]
    return text.splitlines()[-_LOG_LINES:]


def _name(obj: dict[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    gone = " (deleting)" if meta.get("deletionTimestamp") else ""
    return f"{meta.get('name')}{gone}"


def _conditions(status: dict[str, Any]) -> str:
    found = [
        f"{c.get('type')}={c.get('status')}({c.get('reason') or ''})"
        for c in status.get("conditions") or []
    ]
    return " ".join(found) or "no conditions"


def _job_line(job: dict[str, Any]) -> str:
    status = job.get("status") or {}
    counts = " ".join(
        f"{key}={status[key]}"
        for key in ("active", "ready", "succeeded", "failed", "completedIndexes", "failedIndexes")
        if status.get(key) not in (None, "", 0)
    )
    return f"{_name(job)}: {counts or 'no pods counted'}; {_conditions(status)}"


def _lws_line(lws: dict[str, Any]) -> str:
    spec = lws.get("spec") or {}
    status = lws.get("status") or {}
    kinetic = {
        key.rsplit("/", 1)[-1]: value[:80]
        for key, value in ((lws.get("metadata") or {}).get("annotations") or {}).items()
        if "kinetic" in key
    }
    return (
        f"{_name(lws)}: replicas={spec.get('replicas')} ready={status.get('readyReplicas')}; "
        f"{_conditions(status)}; kinetic annotations {kinetic}"
    )


def _pod_line(pod: dict[str, Any]) -> str:
    status = pod.get("status") or {}
    spec = pod.get("spec") or {}
    containers = []
    for c in status.get("containerStatuses") or []:
        state = c.get("state") or {}
        (kind, detail), *_ = state.items() if state else [("unknown", {})]
        reason = (detail or {}).get("reason") or ""
        code = (detail or {}).get("exitCode")
        last = ((c.get("lastState") or {}).get("terminated") or {}).get("exitCode")
        containers.append(
            f"{c.get('name')}:{kind}{f'({reason})' if reason else ''}"
            + (f" exit {code}" if code is not None else "")
            + f" restarts={c.get('restartCount', 0)}"
            + (f" last-exit {last}" if last is not None else "")
        )
    return (
        f"{_name(pod)}: phase={status.get('phase')} node={spec.get('nodeName') or '-'} "
        f"{' '.join(containers) or 'no container status'}; {_conditions(status)}"
    )


def _event_time(event: dict[str, Any]) -> str:
    return str(
        event.get("lastTimestamp") or event.get("eventTime") or event.get("firstTimestamp") or ""
    )


def _event_line(event: dict[str, Any]) -> str:
    involved = event.get("involvedObject") or {}
    return (
        f"{_event_time(event)} {involved.get('kind')}/{involved.get('name')} "
        f"{event.get('reason')}: {(event.get('message') or '')[:200]}"
    )
