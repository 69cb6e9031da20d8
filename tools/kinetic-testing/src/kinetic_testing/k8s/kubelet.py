"""The simulated kubelet: takes every pod from Pending to a terminal phase by running its first
container's command as a local process, and applies the pod faults in force.

`sync` is called by the controller loop with the store lock held; it never blocks.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import podstatus as ps
from .faults import (
    Eviction,
    FaultRegistry,
    ImagePullFailure,
    NodeLoss,
    OOMKill,
    PodFault,
    Preemption,
    Unschedulable,
)
from .processes import ContainerConfigError, ContainerProcess, container_env, expand, start
from .resources import PODS
from .status import now_rfc3339
from .store import ObjectStore

__all__ = ["Kubelet", "PodRuntime"]

_TERMINAL = ("Succeeded", "Failed")
_KILL_FAULTS: tuple[type[PodFault], ...] = (OOMKill, Eviction, Preemption, NodeLoss)
_SHUTDOWN_MSG = "Pod was terminated in response to imminent node shutdown."


@dataclass
class PodRuntime:
    """What the kubelet knows about one pod beyond its API object."""

    sandbox: Path
    seen: float = field(default_factory=time.monotonic)
    process: ContainerProcess | None = None
    logs: list[Path] = field(default_factory=list)
    restarts: int = 0
    next_start: float = 0.0
    last_state: dict[str, Any] | None = None
    #: For LeaderWorkerSet workers: the leader pod whose state this pod mirrors (no process).
    mirror_of: str | None = None
    #: LeaderWorkerSet pods run once, whatever their restartPolicy says.
    no_restart: bool = False
    #: (pod status reason, message) for a kill fault in progress: the pod ends Failed.
    outcome: tuple[str, str] | None = None
    fault_applied: bool = False
    finished: bool = False


class Kubelet:
    """Runs pods on one imaginary node."""

    def __init__(
        self,
        store: ObjectStore,
        faults: FaultRegistry,
        workdir: Path,
        *,
        start_delay: float,
        grace_cap: float,
        restart_backoff: float,
    ) -> None:
        self._store = store
        self._faults = faults
        self._workdir = workdir
        self._start_delay = start_delay
        self._grace_cap = grace_cap
        self._restart_backoff = restart_backoff
        self._runtimes: dict[str, PodRuntime] = {}
        self._next_ip = 10

    def runtime(self, pod: dict[str, Any]) -> PodRuntime:
        """The runtime record of a pod, created on first sight."""
        meta = pod["metadata"]
        uid = meta["uid"]
        if uid not in self._runtimes:
            sandbox = self._workdir / "pods" / f"{meta['namespace']}_{meta['name']}_{uid[:8]}"
            sandbox.mkdir(parents=True, exist_ok=True)
            self._runtimes[uid] = PodRuntime(sandbox)
        return self._runtimes[uid]

    def peek_runtime(self, uid: str) -> PodRuntime | None:
        """The runtime of a pod if the kubelet has seen it."""
        return self._runtimes.get(uid)

    def running_pids(self) -> list[int]:
        """Pids of container processes that have not exited yet."""
        return [
            rt.process.proc.pid
            for rt in self._runtimes.values()
            if rt.process is not None and rt.process.proc.poll() is None
        ]

    def shutdown(self) -> None:
        """Kill every process group and reap it: nothing outlives the simulator."""
        for rt in self._runtimes.values():
            if rt.process is not None:
                rt.process.reap()

    # -- the loop ---------------------------------------------------------------------------

    def sync(self) -> None:
        """One pass over every pod."""
        live_uids = set()
        for pod in self._store.live(PODS):
            live_uids.add(pod["metadata"]["uid"])
            rt = self.runtime(pod)
            if pod["metadata"].get("deletionTimestamp"):
                self._sync_deleting(pod, rt)
            elif rt.finished or pod.get("status", {}).get("phase") in _TERMINAL:
                continue
            elif rt.mirror_of is not None:
                self._sync_mirror(pod, rt)
            elif rt.process is None:
                self._sync_pending(pod, rt)
            else:
                self._sync_running(pod, rt)
        for uid in set(self._runtimes) - live_uids:
            rt = self._runtimes[uid]
            if rt.process is None or rt.process.poll() is not None:
                del self._runtimes[uid]
            else:  # removed behind our back (shouldn't happen): still make sure it dies
                rt.process.kill()

    def _set_status(self, pod: dict[str, Any], status: dict[str, Any]) -> None:
        self._store.set_field(pod, "status", status)

    def _sync_deleting(self, pod: dict[str, Any], rt: PodRuntime) -> None:
        if rt.process is not None and rt.process.poll() is None:
            meta = pod["metadata"]
            grace = meta.get("deletionGracePeriodSeconds")
            if grace is None:
                grace = pod["spec"].get("terminationGracePeriodSeconds", 30)
            rt.process.terminate(min(float(grace), self._grace_cap))
            rt.process.enforce_deadline()
            return
        self._store.remove(PODS, pod["metadata"]["namespace"], pod["metadata"]["name"])

    def _sync_pending(self, pod: dict[str, Any], rt: PodRuntime) -> None:
        now = now_rfc3339()
        status = pod.get("status") or ps.initial_status(pod)
        spec = pod["spec"]
        if not spec.get("nodeName"):
            stall = self._faults.pod_fault((Unschedulable,), pod)
            if isinstance(stall, Unschedulable):
                self._set_status(pod, ps.unschedulable(status, stall.message, now))
                return
            spec["nodeName"] = ps.NODE_NAME
            status = ps.scheduled(status, now)
        container = spec["containers"][0]
        pull = self._faults.pod_fault((ImagePullFailure,), pod)
        if isinstance(pull, ImagePullFailure):
            image = pull.image or str(container.get("image"))
            # Like the kubelet: ErrImagePull on each attempt, ImagePullBackOff in between.
            if pull.seconds_since_hit(pod["metadata"]["uid"]) % 2.0 < 0.5:
                reason = "ErrImagePull"
                message = (
                    f'failed to pull and unpack image "{image}": failed to resolve reference '
                    f'"{image}": {image}: not found'
                )
            else:
                reason, message = "ImagePullBackOff", f'Back-off pulling image "{image}"'
            self._set_status(pod, ps.waiting(pod, status, reason, message, now, rt.restarts))
            return
        mono = time.monotonic()
        if mono < rt.seen + self._start_delay or mono < rt.next_start:
            reason = "CrashLoopBackOff" if rt.restarts else "ContainerCreating"
            backoff = (
                f"back-off restarting failed container={container['name']} "
                f"pod={pod['metadata']['name']}"
                if rt.restarts
                else None
            )
            self._set_status(
                pod, ps.waiting(pod, status, reason, backoff, now, rt.restarts, rt.last_state)
            )
            return
        try:
            declared = container_env(container, pod)
        except ContainerConfigError as exc:
            waiting = ps.waiting(pod, status, "CreateContainerConfigError", str(exc), now)
            self._set_status(pod, waiting)
            return
        self._launch(pod, rt, container, declared, status, now)

    def _launch(
        self,
        pod: dict[str, Any],
        rt: PodRuntime,
        container: dict[str, Any],
        declared: dict[str, str],
        status: dict[str, Any],
        now: str,
    ) -> None:
        argv = [expand(str(a), declared) for a in (container.get("command") or [])]
        argv += [expand(str(a), declared) for a in (container.get("args") or [])]
        log_path = rt.sandbox / f"{container['name']}-{rt.restarts}.log"
        rt.logs.append(log_path)
        log_path.touch()
        cwd = Path(container.get("workingDir") or rt.sandbox)
        env = {**os.environ, "HOSTNAME": pod["metadata"]["name"], **declared}
        if not container.get("command"):
            image = container.get("image")
            problem = (
                f"the simulator cannot run the entrypoint of image {image!r}: "
                "give the container an explicit `command`"
            )
        else:
            try:
                rt.process = start(argv, env=env, cwd=cwd, log_path=log_path)
                problem = ""
            except OSError as exc:
                problem = (
                    f"failed to create containerd task: exec: {exc.filename!r}: {exc.strerror}"
                )
        if rt.process is None:
            # Like a container runtime's StartError: the pod fails with exit code 128.
            self._finish(pod, rt, status, 128, "StartError", None, now, problem)
            return
        ip = status.get("podIP") or f"10.4.0.{self._next_ip}"
        self._next_ip += 1
        self._set_status(
            pod,
            ps.running(pod, status, rt.process.started_at, now, ip, rt.restarts, rt.last_state),
        )

    def _sync_running(self, pod: dict[str, Any], rt: PodRuntime) -> None:
        assert rt.process is not None
        rt.process.enforce_deadline()
        code = rt.process.poll()
        if code is not None:
            reason = rt.process.forced_reason or ("Completed" if code == 0 else "Error")
            status = pod.get("status") or {}
            self._finish(pod, rt, status, code, reason, rt.process.started_at, now_rfc3339())
            return
        if rt.fault_applied:
            return
        fault = self._faults.pod_fault(_KILL_FAULTS, pod)
        if fault is None or time.monotonic() - rt.process.started < getattr(fault, "after", 0.0):
            return
        rt.fault_applied = True
        self._apply_kill_fault(pod, rt, rt.process, fault)

    def _apply_kill_fault(
        self, pod: dict[str, Any], rt: PodRuntime, proc: ContainerProcess | None, fault: PodFault
    ) -> None:
        now = now_rfc3339()
        status = pod.get("status") or {}
        conds = status.get("conditions") or []
        grace = min(float(pod["spec"].get("terminationGracePeriodSeconds", 30)), self._grace_cap)
        if isinstance(fault, OOMKill):
            if proc is None:
                self._finish(pod, rt, status, 137, "OOMKilled", None, now)
            else:
                proc.kill("OOMKilled")
            return
        if isinstance(fault, NodeLoss):
            if proc is not None:
                proc.kill()
            self._node_lost(pod, rt, fault, status, now)
            return
        if isinstance(fault, Eviction):
            reason, why, message = "Evicted", "TerminationByKubelet", fault.message
        elif isinstance(fault, Preemption) and fault.by == "scheduler":
            reason, why = "Preempted", "PreemptionByScheduler"
            message = "default-scheduler: preempting to accommodate a higher priority pod"
        else:
            reason, why, message = "Terminated", "TerminationByKubelet", _SHUTDOWN_MSG
        conds = ps.set_condition(conds, "DisruptionTarget", "True", now, why, message)
        self._set_status(pod, {**status, "conditions": conds})
        rt.outcome = (reason, message)
        if isinstance(fault, Preemption) and fault.by == "scheduler":
            # The scheduler deletes its victim; the pod then terminates with its grace period.
            pod["metadata"]["deletionTimestamp"] = now
            pod["metadata"]["deletionGracePeriodSeconds"] = int(grace)
            self._store.bump(pod)
        elif proc is not None:
            proc.terminate(grace)
        else:
            self._finish(pod, rt, status | {"conditions": conds}, 137, "Error", None, now)

    def _node_lost(
        self, pod: dict[str, Any], rt: PodRuntime, fault: NodeLoss, status: dict[str, Any], now: str
    ) -> None:
        rt.finished = True
        conds = status.get("conditions") or []
        if fault.phase == "Unknown":
            conds = ps.set_condition(
                conds, "Ready", "False", now, "NodeLost", "node is unreachable"
            )
            self._set_status(pod, {**status, "phase": "Unknown", "conditions": conds})
        else:
            out = ps.terminated(
                pod,
                status,
                exit_code=137,
                reason="ContainerStatusUnknown",
                now=now,
                started_at=rt.process.started_at if rt.process else None,
                phase="Failed",
                message="The container could not be located when the pod was terminated",
                restarts=rt.restarts,
            )
            out["conditions"] = ps.set_condition(
                out["conditions"],
                "DisruptionTarget",
                "True",
                now,
                "DeletionByPodGC",
                "PodGC: node no longer exists",
            )
            self._set_status(pod, out)
        if fault.delete_pod:
            pod["metadata"]["deletionTimestamp"] = now
            pod["metadata"]["deletionGracePeriodSeconds"] = 0
            self._store.bump(pod)

    def _finish(
        self,
        pod: dict[str, Any],
        rt: PodRuntime,
        status: dict[str, Any],
        code: int,
        reason: str,
        started_at: str | None,
        now: str,
        message: str | None = None,
    ) -> None:
        policy = pod["spec"].get("restartPolicy", "Always")
        restart = policy == "Always" or (policy == "OnFailure" and code != 0)
        if restart and not rt.no_restart and rt.outcome is None:
            term = {
                "exitCode": code,
                "reason": reason,
                "startedAt": started_at or now,
                "finishedAt": now,
            }
            rt.last_state = {"terminated": term}
            rt.restarts += 1
            backoff = min(self._restart_backoff * 2 ** (rt.restarts - 1), 5.0)
            rt.next_start = time.monotonic() + backoff
            rt.process = None
            container = pod["spec"]["containers"][0]["name"]
            msg = f"back-off restarting failed container={container} pod={pod['metadata']['name']}"
            self._set_status(
                pod,
                ps.waiting(pod, status, "CrashLoopBackOff", msg, now, rt.restarts, rt.last_state),
            )
            return
        rt.finished = True
        phase = "Succeeded" if code == 0 and rt.outcome is None else "Failed"
        out = ps.terminated(
            pod,
            status,
            exit_code=code,
            reason=reason,
            started_at=started_at,
            now=now,
            phase=phase,
            message=message,
            restarts=rt.restarts,
            last_state=rt.last_state,
        )
        if rt.outcome is not None:
            out["reason"], out["message"] = rt.outcome
        self._set_status(pod, out)

    def _sync_mirror(self, pod: dict[str, Any], rt: PodRuntime) -> None:
        now = now_rfc3339()
        status = pod.get("status") or ps.initial_status(pod)
        fault = self._faults.pod_fault(_KILL_FAULTS, pod)
        if fault is not None and status.get("phase") == "Running":
            self._apply_kill_fault(pod, rt, None, fault)
            return
        leader = self._store.peek(PODS, pod["metadata"]["namespace"], str(rt.mirror_of))
        leader_phase = (leader or {}).get("status", {}).get("phase")
        if leader_phase == "Running" and status.get("phase") != "Running":
            pod["spec"]["nodeName"] = ps.NODE_NAME
            if not rt.logs:
                rt.logs.append(rt.sandbox / "worker-0.log")
                rt.logs[0].touch()
            ip = f"10.4.0.{self._next_ip}"
            self._next_ip += 1
            self._set_status(pod, ps.running(pod, ps.scheduled(status, now), now, now, ip))
        elif leader_phase in _TERMINAL or leader is None:
            ok = leader_phase == "Succeeded"
            msg = None if ok else "stopped by the simulator because the group's leader failed"
            self._finish(
                pod,
                rt,
                status,
                0 if ok else 137,
                "Completed" if ok else "Error",
                status.get("startTime"),
                now,
                msg,
            )
