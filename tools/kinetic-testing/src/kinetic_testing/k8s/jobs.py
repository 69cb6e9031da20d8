"""The simulated Job controller: creates a Job's pods, counts their outcomes, applies
`backoffLimit`, `activeDeadlineSeconds`, `podFailurePolicy` and `ttlSecondsAfterFinished`, and
writes `status` the way Kubernetes 1.31+ does (FailureTarget / SuccessCriteriaMet first, then
Failed / Complete once no pod is left running).
"""

from __future__ import annotations

import copy
import time
from dataclasses import dataclass, field
from typing import Any

from . import podstatus as ps
from .gc import mark_deleting
from .resources import JOBS, PODS
from .status import ApiError, now_rfc3339
from .store import ObjectStore, random_suffix

__all__ = ["JobController"]

_BACKOFF_MSG = "Job has reached the specified backoff limit"
_DEADLINE_MSG = "Job was active longer than specified deadline"
_COMPLETE_MSG = "Reached expected number of succeeded pods"
_TERMINAL = ("Succeeded", "Failed")


@dataclass
class _Tracking:
    """Per-Job bookkeeping the real controller keeps with pod finalizers."""

    #: Every pod seen, by uid, as last seen (to judge a pod that vanished before finishing).
    known: dict[str, dict[str, Any]] = field(default_factory=dict)
    counted: set[str] = field(default_factory=set)
    succeeded: int = 0
    failed: int = 0
    started: float = field(default_factory=time.monotonic)
    last_failure: float = 0.0
    #: (condition type to end with, reason, message) once the outcome is decided.
    target: tuple[str, str, str] | None = None
    finished: float | None = None


def _is_true(obj: dict[str, Any], kind: str) -> bool:
    conds = (obj.get("status") or {}).get("conditions") or []
    return any(c["type"] == kind and c["status"] == "True" for c in conds)


class JobController:
    """Reconciles every Job on each pass of the controller loop."""

    def __init__(self, store: ObjectStore, *, backoff_seconds: float) -> None:
        self._store = store
        self._backoff = backoff_seconds
        self._tracking: dict[str, _Tracking] = {}

    def sync(self) -> None:
        """One pass over every Job."""
        jobs = self._store.live(JOBS)
        for job in jobs:
            if not job["metadata"].get("deletionTimestamp"):
                self._sync_job(job)
        live = {job["metadata"]["uid"] for job in jobs}
        for uid in set(self._tracking) - live:
            del self._tracking[uid]

    def _sync_job(self, job: dict[str, Any]) -> None:
        meta, spec = job["metadata"], job["spec"]
        tr = self._tracking.setdefault(meta["uid"], _Tracking())
        if _is_true(job, "Complete") or _is_true(job, "Failed"):
            self._expire(job, tr)
            return
        status = copy.deepcopy(job.get("status") or {})
        now = now_rfc3339()
        pods = [
            p
            for p in self._store.live(PODS)
            if p["metadata"]["namespace"] == meta["namespace"]
            and (p["metadata"].get("labels") or {}).get("batch.kubernetes.io/controller-uid")
            == meta["uid"]
        ]
        self._count(job, tr, pods)
        active = [p for p in pods if _phase(p) not in _TERMINAL and not _deleting(p)]
        terminating = [p for p in pods if _phase(p) not in _TERMINAL and _deleting(p)]
        conds = status.get("conditions") or []
        if spec.get("suspend"):
            conds = ps.set_condition(
                conds, "Suspended", "True", now, "JobSuspended", "Job suspended"
            )
        else:
            status.setdefault("startTime", now)
            if tr.target is None:
                tr.target = self._decide(spec, tr)
            if tr.target is not None:
                conds = self._wind_down(status, conds, tr, active, terminating, now)
                active = []
            else:
                active += self._create_pods(job, tr, len(active))
        status["conditions"] = conds
        if not conds:
            del status["conditions"]
        ready = sum(1 for p in active if _is_true(p, "Ready"))
        for key, value in (
            ("active", len(active)),
            ("succeeded", tr.succeeded),
            ("failed", tr.failed),
        ):
            if value:
                status[key] = value
            else:
                status.pop(key, None)
        status["ready"] = ready
        status["terminating"] = len(terminating)
        status["uncountedTerminatedPods"] = {}
        self._store.set_field(job, "status", status)

    def _count(self, job: dict[str, Any], tr: _Tracking, pods: list[dict[str, Any]]) -> None:
        present = set()
        for pod in pods:
            uid = pod["metadata"]["uid"]
            present.add(uid)
            tr.known[uid] = pod
            if uid in tr.counted or _phase(pod) not in _TERMINAL:
                continue
            tr.counted.add(uid)
            if _phase(pod) == "Succeeded":
                tr.succeeded += 1
            else:
                self._count_failure(job, tr, pod)
        # A pod that vanished before reaching a terminal phase (deleted, preempted) failed.
        for uid in set(tr.known) - present - tr.counted:
            tr.counted.add(uid)
            self._count_failure(job, tr, tr.known[uid])

    @staticmethod
    def _count_failure(job: dict[str, Any], tr: _Tracking, pod: dict[str, Any]) -> None:
        action, message = _failure_policy(job, pod)
        if action == "Ignore":
            return
        tr.failed += 1
        tr.last_failure = time.monotonic()
        if action == "FailJob" and tr.target is None:
            tr.target = ("Failed", "PodFailurePolicy", message)

    def _decide(self, spec: dict[str, Any], tr: _Tracking) -> tuple[str, str, str] | None:
        completions = spec.get("completions") or 1
        if tr.succeeded >= completions:
            return ("Complete", "CompletionsReached", _COMPLETE_MSG)
        if tr.failed > int(spec.get("backoffLimit", 6)):
            return ("Failed", "BackoffLimitExceeded", _BACKOFF_MSG)
        deadline = spec.get("activeDeadlineSeconds")
        if deadline is not None and time.monotonic() - tr.started >= deadline:
            return ("Failed", "DeadlineExceeded", _DEADLINE_MSG)
        return None

    def _wind_down(
        self,
        status: dict[str, Any],
        conds: list[dict[str, Any]],
        tr: _Tracking,
        active: list[dict[str, Any]],
        terminating: list[dict[str, Any]],
        now: str,
    ) -> list[dict[str, Any]]:
        assert tr.target is not None
        final, reason, message = tr.target
        interim = "SuccessCriteriaMet" if final == "Complete" else "FailureTarget"
        conds = ps.set_condition(conds, interim, "True", now, reason, message)
        for pod in active:
            mark_deleting(self._store, pod)
        if not active and not terminating:
            conds = ps.set_condition(conds, final, "True", now, reason, message)
            if final == "Complete":
                status["completionTime"] = now
            tr.finished = time.monotonic()
        return conds

    def _create_pods(self, job: dict[str, Any], tr: _Tracking, active: int) -> list[Any]:
        spec = job["spec"]
        completions = spec.get("completions") or 1
        want = min(int(spec.get("parallelism", 1)), completions - tr.succeeded) - active
        if want <= 0 or (
            tr.failed and time.monotonic() < tr.last_failure + self._backoff * 2 ** (tr.failed - 1)
        ):
            return []
        return [self._create_pod(job) for _ in range(want)]

    def _create_pod(self, job: dict[str, Any]) -> dict[str, Any]:
        meta, template = job["metadata"], job["spec"]["template"]
        base = f"{meta['name']}-"[:58]
        pod: dict[str, Any] = {
            "metadata": {
                "labels": dict(template["metadata"].get("labels") or {}),
                "annotations": {
                    **(template["metadata"].get("annotations") or {}),
                    "batch.kubernetes.io/job-tracking": "",
                },
                "ownerReferences": [
                    {
                        "apiVersion": "batch/v1",
                        "kind": "Job",
                        "name": meta["name"],
                        "uid": meta["uid"],
                        "controller": True,
                        "blockOwnerDeletion": True,
                    }
                ],
            },
            "spec": copy.deepcopy(template["spec"]),
        }
        for _ in range(10):
            pod["metadata"]["name"] = base + random_suffix()
            try:
                self._store.create(PODS, meta["namespace"], pod)
            except ApiError:
                continue
            created = self._store.peek(PODS, meta["namespace"], pod["metadata"]["name"])
            assert created is not None
            created["status"] = ps.initial_status(created)
            return created
        raise RuntimeError(f"could not find a free pod name for job {meta['name']!r}")

    def _expire(self, job: dict[str, Any], tr: _Tracking) -> None:
        ttl = job["spec"].get("ttlSecondsAfterFinished")
        if ttl is None:
            return
        if tr.finished is None:
            tr.finished = time.monotonic()
        if time.monotonic() >= tr.finished + ttl:
            # The TTL controller deletes with Foreground propagation.
            job["metadata"]["deletionTimestamp"] = now_rfc3339()
            job["metadata"]["finalizers"] = ["foregroundDeletion"]
            self._store.bump(job)


def _phase(pod: dict[str, Any]) -> str:
    return str((pod.get("status") or {}).get("phase", "Pending"))


def _deleting(pod: dict[str, Any]) -> bool:
    return bool(pod["metadata"].get("deletionTimestamp"))


def _failure_policy(job: dict[str, Any], pod: dict[str, Any]) -> tuple[str, str]:
    """The podFailurePolicy action for a failed pod: Count, Ignore or FailJob (and why)."""
    rules = (job["spec"].get("podFailurePolicy") or {}).get("rules") or []
    statuses = (pod.get("status") or {}).get("containerStatuses") or []
    name = pod["metadata"]["name"]
    for index, rule in enumerate(rules):
        on_codes = rule.get("onExitCodes")
        if on_codes:
            values = set(on_codes.get("values") or [])
            for cs in statuses:
                if on_codes.get("containerName") not in (None, cs["name"]):
                    continue
                code = (cs.get("state", {}).get("terminated") or {}).get("exitCode")
                if code is None or code == 0:
                    continue
                hit = code in values if on_codes.get("operator") == "In" else code not in values
                if hit:
                    return rule["action"], (
                        f"Container {cs['name']} for pod {pod['metadata']['namespace']}/{name} "
                        f"failed with exit code {code} matching {rule['action']} rule at index "
                        f"{index}"
                    )
        for pattern in rule.get("onPodConditions") or []:
            if _is_true(pod, pattern["type"]) == (pattern.get("status", "True") == "True"):
                return rule["action"], (
                    f"Pod {pod['metadata']['namespace']}/{name} has condition {pattern['type']} "
                    f"matching {rule['action']} rule at index {index}"
                )
    return "Count", ""
