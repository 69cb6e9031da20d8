"""The kubelet role: run each pod bound to our nodes as a local process and report its status.

Only the first container runs (its ``command + args``): inside its image when that image was
built locally in this session (``images``: see :mod:`.in_image`), otherwise as a process of
this machine, its ``python`` the interpreter the test gave for the image (``pythons``) or
this one. Everything here
runs on the agent's single reconcile thread, so runtimes need no lock; only the log index,
read by the log server's threads, is guarded.
"""

from __future__ import annotations

import itertools
import random
import sys
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from . import statuses as st
from .api import Kube, Obj, describe, is_gone, now_rfc3339
from .env import EnvError, container_argv, container_env, interpreter_env
from .faults import FaultKind, FaultRegistry
from .in_image import InImageStarts
from .logserver import LogSource, rotate_log
from .processes import PodProcess
from .runtime import PodRuntime, container_names
from .volume_sources import ApiVolumeSources
from .volumes import MountError, mount_plan, wrap_argv

if TYPE_CHECKING:
    from kinetic_testing.images.pods import LocalImages

__all__ = ["Kubelet"]

_KILL_FAULTS: tuple[FaultKind, ...] = ("oom", "evict", "preempt", "node-loss")
_MAX_GRACE = 2.0
_GROUP_EXIT_S = 10.0
"""How long a container's SIGKILLed processes get to die before it is reported exited anyway."""
_PULL_BACKOFF_AFTER = 1.0


class Kubelet:
    """Pod lifecycles for a set of nodes; :meth:`sync` and :meth:`tick` drive it."""

    def __init__(
        self,
        kube: Kube,
        workdir: Path,
        host_env: Mapping[str, str],
        faults: FaultRegistry,
        on_node_loss: Callable[[str], None],
        report: Callable[[str], None],
        images: LocalImages | None = None,
        pythons: Mapping[str, str] | None = None,
    ) -> None:
        self._kube = kube
        self._workdir = workdir
        self._host_env = dict(host_env)
        self._faults = faults
        self._on_node_loss = on_node_loss
        self._report = report
        sources = ApiVolumeSources(kube)
        self._secret_data, self._projected = sources.secret_data, sources.projected
        self._in_image = (
            InImageStarts(images, kube, host_env, self._secret_data, self._projected)
            if images is not None
            else None
        )
        self._pythons = pythons if pythons is not None else {}
        """The agent's own mapping, read at each start: a test may add an image to it."""
        self._runtimes: dict[str, PodRuntime] = {}
        self._logs: dict[tuple[str, str], PodRuntime] = {}
        self._logs_lock = threading.Lock()
        self._ips = itertools.count(random.randrange(60_000))  # unlike an earlier agent's

    # Entry points (reconcile thread)
    def sync(self, pod: Obj, node: str) -> None:
        """React to the latest version of a pod bound to one of our (live) nodes."""
        uid = pod["metadata"]["uid"]
        rt = self._runtimes.get(uid)
        if rt is None:
            terminal = (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")
            if terminal and not pod["metadata"].get("deletionTimestamp"):
                return  # finished under an earlier agent: nothing left to run or report
            rt = self._admit(pod, node)
        rt.pod = pod
        if pod["metadata"].get("deletionTimestamp"):
            self._terminate(rt)
        elif not rt.finished and (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            rt.finished = True  # someone else (pod GC, a test) ended it: stop the process
            if rt.alive() and rt.process is not None:
                rt.process.kill()
        elif rt.process is None and not rt.finished:
            self._try_start(rt)

    def forget(self, uid: str) -> None:
        """The pod object is gone: make sure its process is too."""
        rt = self._runtimes.pop(uid, None)
        if rt is None:
            return
        if rt.process is not None:
            rt.process.reap(timeout=0.5)
        self._remove_container(rt)
        with self._logs_lock:
            if self._logs.get(rt.key) is rt:
                del self._logs[rt.key]

    def tick(self) -> None:
        """Periodic work: exits, overdue kills, timed faults, restarts, image-pull progress."""
        for rt in list(self._runtimes.values()):
            try:
                self._tick_one(rt)
            except Exception as exc:
                self._report(f"kubelet {rt.key[0]}/{rt.key[1]}: {describe(exc)}")

    def running(self) -> dict[str, int]:
        """``namespace/name`` of each pod whose process runs, and that process's pid (the
        leader of its process group)."""
        return {
            f"{rt.key[0]}/{rt.key[1]}": rt.process.pid
            for rt in list(self._runtimes.values())
            if rt.process is not None and rt.process.exit_code is None
        }

    def drop_node(self, node: str) -> list[Obj]:
        """The node's VM is gone: kill its processes, forget its pods; returns their last pods."""
        lost = [rt for rt in self._runtimes.values() if rt.node == node]
        for rt in lost:
            if rt.process is not None:
                rt.process.reap(timeout=0.5)
            rt.finished = rt.confirmed = True
        return [rt.pod for rt in lost]

    def stop(self) -> None:
        """SIGKILL every process group first, then reap them (so stop stays fast)."""
        processes = [rt.process for rt in self._runtimes.values() if rt.process is not None]
        for process in processes:
            process.kill()
        for process in processes:
            process.reap(timeout=0.2)
        for rt in self._runtimes.values():
            self._remove_container(rt)

    def _remove_container(self, rt: PodRuntime) -> None:
        if self._in_image is not None:
            self._in_image.remove(rt)

    def log_source(self, namespace: str, name: str, container: str) -> LogSource | None:
        with self._logs_lock:
            rt = self._logs.get((namespace, name))
        if rt is None or container not in container_names(rt.pod):
            return None
        return LogSource(rt.log_path, rt.alive, rt.node)

    # Internals
    def _admit(self, pod: Obj, node: str) -> PodRuntime:
        meta = pod["metadata"]
        directory = self._workdir / "pods" / f"{meta['namespace']}_{meta['name']}_{meta['uid'][:8]}"
        (directory / "tmp").mkdir(parents=True, exist_ok=True)
        n = next(self._ips)
        ip = (pod.get("status") or {}).get("podIP") or f"10.244.{(n // 250) % 250}.{n % 250 + 1}"
        name = container_names(pod)[0]
        rt = PodRuntime(pod, node, directory, directory / f"{name}.log", ip)
        rt.log_path.touch()
        if (pod.get("status") or {}).get("phase") == "Running":
            self._adopt(rt)
        self._runtimes[meta["uid"]] = rt
        with self._logs_lock:
            self._logs[rt.key] = rt
        return rt

    def _adopt(self, rt: PodRuntime) -> None:
        """A pod another agent ran: its process is gone, as after a node reboot.

        Like the kubelet, report a container it cannot find as ContainerStatusUnknown (137);
        pods that restart (LWS/StatefulSet) start again, with a restart counted.
        """
        policy = rt.pod["spec"].get("restartPolicy", "Always")
        rt.restarts = 1 + max(
            (c.get("restartCount", 0) for c in rt.pod["status"].get("containerStatuses") or []),
            default=0,
        )
        if policy == "Always":
            return
        rt.finished = True
        message = "The container could not be located when the pod was terminated"
        status = st.terminated(
            rt.pod, exit_code=137, started_at=None, now=now_rfc3339(),
            outcome=st.Outcome("ContainerStatusUnknown"), message=message,
        )  # fmt: skip
        self._patch(rt, status)

    def _patch(self, rt: PodRuntime, status: Obj) -> None:
        ns, name = rt.key
        try:
            self._kube.patch_pod_status(ns, name, status, rt.pod["metadata"]["uid"])
        except Exception as exc:
            if not is_gone(exc):
                raise

    def _try_start(self, rt: PodRuntime) -> None:
        if time.monotonic() < rt.retry_at:
            return
        pod = rt.pod
        container = pod["spec"]["containers"][0]
        fault = self._faults.claim(("image-pull",), pod)
        if fault is not None:
            self._image_pull_failure(rt, container.get("image", ""), fault.reason, fault.message)
            return
        rt.retry_at = time.monotonic() + 1.0  # whatever goes wrong below, retry calmly
        local_tag = self._in_image.local_tag(container) if self._in_image else None
        if local_tag is not None:
            self._start_in_image(rt, container, local_tag)
            return
        pod_env = {"TMPDIR": str(rt.directory / "tmp"), **self._kube.service_env()}
        view = {**pod, "status": {**(pod.get("status") or {}), "podIP": rt.pod_ip}}
        python = self._pythons.get(str(container.get("image", "")))
        host_env = self._host_env if python is None else interpreter_env(self._host_env, python)
        try:
            env = container_env(
                view,
                container,
                host_env,
                pod_env,
                self._kube.secret_value,
                self._kube.config_map_value,
                self._kube.config_map_data,
            )
            argv = container_argv(container, env, python or sys.executable)
        except EnvError as exc:
            self._wait(rt, "CreateContainerConfigError", str(exc))
            return
        try:
            secrets = self._secret_data
            plan = mount_plan(pod, container, rt.directory, secrets, self._projected)
            argv = wrap_argv(argv, plan, rt.directory)
        except MountError as exc:
            self._wait(rt, "ContainerCreating", str(exc))
            return
        self._launch(rt, argv, env)

    def _start_in_image(self, rt: PodRuntime, container: Obj, local_tag: str) -> None:
        assert self._in_image is not None
        try:
            argv, env = self._in_image.command(rt, container, local_tag)
        except EnvError as exc:
            self._wait(rt, "CreateContainerConfigError", str(exc))
            return
        except MountError as exc:
            self._wait(rt, "ContainerCreating", str(exc))
            return
        self._launch(rt, argv, env)

    def _wait(self, rt: PodRuntime, reason: str, message: str) -> None:
        """The container waits for ``reason``; said once, as a kubelet reports it."""
        if rt.waiting_reason != reason:
            rt.waiting_reason = reason
            self._patch(rt, st.waiting(rt.pod, reason, message, now_rfc3339()))

    def _launch(self, rt: PodRuntime, argv: list[str], env: dict[str, str]) -> None:
        pod = rt.pod
        now = now_rfc3339()
        rt.waiting_reason = None
        try:
            rt.process = PodProcess(argv, env, rt.directory, rt.log_path)
        except OSError as exc:
            rt.finished = True
            message = f"failed to create containerd task: exec: {argv[0]!r}: {exc.strerror}"
            status = st.terminated(
                pod, exit_code=128, started_at=None, now=now, outcome=st.Outcome("StartError"),
                restarts=rt.restarts, message=message,
            )  # fmt: skip
            self._patch(rt, status)
            return
        rt.started_at, rt.started_mono = now, time.monotonic()
        self._patch(rt, st.running(pod, now, rt.pod_ip, rt.restarts, rt.last_state))

    def _image_pull_failure(self, rt: PodRuntime, image: str, reason: str, message: str) -> None:
        """ErrImagePull, then ImagePullBackOff a second later (or a fault's own reason, once)."""
        if reason:
            if rt.waiting_reason == reason:
                return
            stage = reason
        elif rt.waiting_reason not in ("ErrImagePull", "ImagePullBackOff"):
            stage, rt.waiting_since = "ErrImagePull", time.monotonic()
        elif rt.waiting_reason == "ErrImagePull" and (
            time.monotonic() - rt.waiting_since >= _PULL_BACKOFF_AFTER
        ):
            stage = "ImagePullBackOff"
        else:
            return
        rt.waiting_reason = stage
        text = message or st.image_pull_message(image, stage == "ImagePullBackOff")
        self._patch(rt, st.waiting(rt.pod, stage, text, now_rfc3339()))

    def _terminate(self, rt: PodRuntime) -> None:
        if rt.alive() and rt.process is not None:
            grace = rt.pod["metadata"].get("deletionGracePeriodSeconds")
            rt.process.terminate(min(float(30 if grace is None else grace), _MAX_GRACE))
            return
        self._confirm(rt)

    def _confirm(self, rt: PodRuntime) -> None:
        if rt.confirmed:
            return
        if rt.process is not None:  # its first process has just ended: the others go with it
            rt.process.kill()
            rt.process.await_group_exit(_GROUP_EXIT_S)
        rt.confirmed = rt.finished = True
        ns, name = rt.key
        try:
            self._kube.delete_pod(ns, name, rt.pod["metadata"]["uid"])
        except Exception as exc:
            if not is_gone(exc):
                raise

    def _tick_one(self, rt: PodRuntime) -> None:
        if rt.confirmed:
            return
        process = rt.process
        if process is None:
            if not rt.finished and not rt.pod["metadata"].get("deletionTimestamp"):
                self._try_start(rt)
            return
        code = process.exit_code
        if code is not None:
            if rt.finished:  # ended by someone else: their status stands
                process.kill()
                rt.process = None
            else:
                self._exited(rt, process, code)
            return
        process.enforce()
        if not rt.finished:
            self._enforce_active_deadline(rt, process)
            self._apply_kill_faults(rt, process)

    def _enforce_active_deadline(self, rt: PodRuntime, process: PodProcess) -> None:
        """As the kubelet does: a pod running past ``spec.activeDeadlineSeconds`` (counted from
        its start on the node) is stopped with its grace period and fails, DeadlineExceeded."""
        deadline = rt.pod["spec"].get("activeDeadlineSeconds")
        if deadline is None or rt.outcome is not None or process.kill_at is not None:
            return
        if time.monotonic() - rt.admitted_mono < float(deadline):
            return
        rt.outcome = st.DEADLINE_EXCEEDED
        grace = rt.pod["spec"].get("terminationGracePeriodSeconds", 30)
        process.terminate(min(float(grace), _MAX_GRACE))

    def _apply_kill_faults(self, rt: PodRuntime, process: PodProcess) -> None:
        if rt.outcome is not None or process.kill_at is not None:
            return
        fault = self._faults.claim(_KILL_FAULTS, rt.pod)
        if fault is None or time.monotonic() - rt.started_mono < fault.after:
            return
        if fault.kind == "node-loss":
            self._on_node_loss(rt.node)
        elif fault.kind == "oom":
            rt.outcome = st.OOM_KILLED
            process.kill()
        elif fault.kind == "evict":
            rt.outcome = st.Outcome(
                None, "Evicted", fault.message or st.EVICTED.message, "TerminationByKubelet"
            )
            process.kill()  # hard eviction: no grace
        else:
            rt.outcome = st.NODE_SHUTDOWN
            grace = rt.pod["spec"].get("terminationGracePeriodSeconds", 30)
            process.terminate(min(float(grace), _MAX_GRACE))

    def _exited(self, rt: PodRuntime, process: PodProcess, code: int) -> None:
        process.kill()  # the container's other processes die with it
        process.await_group_exit(_GROUP_EXIT_S)
        now = now_rfc3339()
        rt.process = None
        deleting = bool(rt.pod["metadata"].get("deletionTimestamp"))
        policy = rt.pod["spec"].get("restartPolicy", "Always")
        oom = rt.outcome == st.OOM_KILLED
        final = (
            deleting
            or (rt.outcome is not None and not (oom and policy != "Never"))
            or policy == "Never"
            or (policy == "OnFailure" and code == 0)
        )
        if not final:
            # An OOM-killed container restarts like any other exit; the pod stays.
            reason = "OOMKilled" if oom else ("Error" if code else "Completed")
            code = 137 if oom else code
            rt.outcome = None
            rt.last_state = {
                "terminated": {
                    "exitCode": code,
                    "reason": reason,
                    "startedAt": rt.started_at,
                    "finishedAt": now,
                }
            }
            rotate_log(rt.log_path)
            rt.restarts += 1
            delay = min(2.0 ** (rt.restarts - 1), 10.0)
            rt.retry_at = time.monotonic() + delay
            message = f"back-off {delay:.0f}s restarting failed container"
            status = st.waiting(
                rt.pod, "CrashLoopBackOff", message, now, rt.restarts, rt.last_state
            )
            self._patch(rt, status)
            return
        rt.finished = True
        status = st.terminated(
            rt.pod, exit_code=code, started_at=rt.started_at, now=now, outcome=rt.outcome,
            restarts=rt.restarts, last_state=rt.last_state,
        )  # fmt: skip
        self._patch(rt, status)
        if deleting:
            self._confirm(rt)
