"""A pod's ``python -m kinetic_runtime`` forked from a warm interpreter is the process a new
interpreter would have been: same argv, environment, paths, session, standard streams, signal
dispositions and exit codes, with nothing of Kinetic's imported before it starts."""

from __future__ import annotations

import json
import os
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from kinetic_testing import warm_pods
from kinetic_testing.nodeagent import warm
from kinetic_testing.nodeagent.processes import PodProcess

_PROBE = """
import json, os, signal, stat, sys, tempfile
import __main__
def mode(fd):
    return stat.S_IFMT(os.fstat(fd).st_mode), os.fstat(fd).st_rdev
json.dump({
    "argv": sys.argv, "orig_argv": sys.orig_argv[1:], "path": sys.path,
    "env": dict(os.environ), "cwd": os.getcwd(), "tmp": tempfile.gettempdir(),
    "leads_session": os.getsid(0) == os.getpid() == os.getpgid(0),
    "stdin": mode(0) == mode(os.open(os.devnull, os.O_RDONLY)),
    "stdout": [sys.stdout.line_buffering, sys.stdout.write_through, sys.stdout.encoding],
    "signals": [str(signal.getsignal(s)) for s in
                (signal.SIGINT, signal.SIGTERM, signal.SIGCHLD, signal.SIGPIPE)],
    "main": sorted(k for k in vars(__main__) if k not in ("json", "os", "signal", "stat",
                   "sys", "tempfile", "__main__", "mode")),
    "ours": sorted(m for m in sys.modules if m.startswith(("kinetic", "probe_helper"))),
    "fds": sorted(int(fd) for fd in os.listdir("/proc/self/fd")),
}, open(os.environ["PROBE_OUT"], "w"))
print("printed", flush=True)
sys.exit(int(os.environ.get("PROBE_EXIT", "0")))
"""


@pytest.fixture
def pod_dir(tmp_path: Path) -> Path:
    directory = tmp_path / "pod"
    (directory / "tmp").mkdir(parents=True)
    (directory / "probe.py").write_text(_PROBE)
    return directory


def _env(pod_dir: Path, out: str, **extra: str) -> dict[str, str]:
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "LANG": "C.UTF-8",
        "PYTHONUNBUFFERED": "1",
        "TMPDIR": str(pod_dir / "tmp"),
        "PROBE_OUT": str(pod_dir / out),
        **extra,
    }


def _starter(env: dict[str, str]) -> warm._Starter:
    return warm._Starter(dict(warm._settings(env)))


def _new_interpreter(argv: list[str], env: dict[str, str], cwd: Path) -> int:
    with open(cwd / "new.log", "ab") as log:
        return subprocess.run(
            argv, env=env, cwd=cwd, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
            start_new_session=True, check=False,
        ).returncode  # fmt: skip


def test_a_warm_pod_is_the_process_a_new_interpreter_would_be(pod_dir: Path) -> None:
    argv = [sys.executable, "-m", "probe", "--flag", "value"]
    _new_interpreter(argv, _env(pod_dir, "new.json"), pod_dir)
    env = _env(pod_dir, "warm.json")
    starter = _starter(env)
    try:
        child = starter.start(argv, None, env, pod_dir, pod_dir / "warm.log")
        assert child.wait(timeout=60) == 0
    finally:
        starter.close()
    new = json.loads((pod_dir / "new.json").read_text())
    forked = json.loads((pod_dir / "warm.json").read_text())
    new["env"]["PROBE_OUT"] = forked["env"]["PROBE_OUT"]  # the one setting that differs
    assert forked == new
    assert forked["ours"] == [] and forked["leads_session"] and forked["stdin"]
    assert (pod_dir / "warm.log").read_text() == "printed\n"


def test_exit_codes_are_the_new_interpreters(pod_dir: Path) -> None:
    env = _env(pod_dir, "out.json")
    starter = _starter(env)
    log = pod_dir / "log"
    try:
        exits = starter.start(
            [sys.executable, "-m", "probe"], None, {**env, "PROBE_EXIT": "3"}, pod_dir, log
        )
        (pod_dir / "raises.py").write_text("raise ValueError('from the pod')\n")
        raises = starter.start([sys.executable, "-m", "raises"], None, env, pod_dir, log)
        (pod_dir / "waits.py").write_text("import time\nprint('up', flush=True)\ntime.sleep(60)\n")
        killed = starter.start([sys.executable, "-m", "waits"], None, env, pod_dir, log)
        assert exits.wait(timeout=60) == 3
        assert raises.wait(timeout=60) == 1
        while "up" not in log.read_text():
            assert killed.poll() is None
            time.sleep(0.01)  # the pod runs on its own; its log is what shows it started
        os.killpg(killed.pid, signal.SIGKILL)
        assert killed.wait(timeout=60) == -signal.SIGKILL
    finally:
        starter.close()
    assert "ValueError: from the pod" in log.read_text()
    assert log.read_text().count("Traceback (most recent call last)") == 1


def test_only_kinetic_runtime_pods_of_this_interpreter_start_warm(tmp_path: Path) -> None:
    plan = json.dumps({"binds": [], "workspace": str(tmp_path)})
    runtime = [sys.executable, "-m", "kinetic_runtime", "--job", "x"]
    assert warm._runtime_command(runtime) == (runtime, None)
    wrapped = [sys.executable, "-m", "kinetic_testing.enter_mounts", plan, "--", *runtime]
    assert warm._runtime_command(wrapped) == (runtime, json.loads(plan))
    for other in (
        [sys.executable, "-c", "pass"],
        ["/opt/other/python", "-m", "kinetic_runtime"],
        [sys.executable, "-m", "kinetic_testing.enter_mounts", plan, "--", "sh", "-c", "true"],
    ):
        assert warm._runtime_command(other) is None, other


def test_a_pod_process_started_warm_is_reaped_and_reports_its_kill(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through ``PodProcess``, as the kubelet uses it: 128 + the signal once killed."""
    (tmp_path / "kinetic_runtime_stand_in.py").write_text("import time\ntime.sleep(60)\n")
    monkeypatch.setattr(warm, "_MODULE", "kinetic_runtime_stand_in")
    env = {"PATH": os.environ.get("PATH", ""), "LANG": "C.UTF-8"}
    argv = [sys.executable, "-m", "kinetic_runtime_stand_in"]
    process = PodProcess(argv, env, tmp_path, tmp_path / "log")
    assert isinstance(process._popen, warm.WarmChild)
    assert process.exit_code is None
    process.reap(timeout=30)
    assert process.exit_code == 128 + signal.SIGKILL


def test_what_a_pod_inherits_imported_reads_no_pod_setting_at_import() -> None:
    """The preloaded library may read at import only what selects a starter (its settings):
    anything else it read would be the starter's value, not the pod's."""
    script = f"""
import os, json
read = set()
class Recording(type(os.environ)):
    def __getitem__(self, key):
        read.add(key)
        return super().__getitem__(key)
os.environ.__class__ = Recording
for name in {list(warm_pods.PRELOADED)!r}:
    __import__(name)
print(json.dumps(sorted(read)))
"""
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    )
    read = json.loads(done.stdout)
    unselected = [key for key in read if not warm._settings({key: ""})]
    assert unselected == [], f"read at import, and not a starter setting: {unselected}"


class _HeldInThread:
    """A pod's connection whose first use by the thread named ``name`` waits until
    ``release`` is set (``arrived`` says it is waiting): two pollers, interleaved at will."""

    def __init__(self, connection: socket.socket, name: str) -> None:
        self._connection = connection
        self._name = name
        self.arrived, self.release = threading.Event(), threading.Event()

    def __getattr__(self, attribute: str) -> Any:
        found = getattr(self._connection, attribute)
        if threading.current_thread().name != self._name or self.release.is_set():
            return found

        def held(*args: Any, **kwargs: Any) -> Any:
            self.arrived.set()
            assert self.release.wait(timeout=60)
            return found(*args, **kwargs)

        return held


def test_two_threads_polling_an_ended_pod_at_once_both_get_its_exit_code(pod_dir: Path) -> None:
    """The kubelet's loop and the log server (following the pod's log) poll one process at
    once: the one that does not read the starter's answer must not take the answer's end for
    a lost starter (-9, the exit code 137 a pathways host once reported after succeeding)."""
    env = _env(pod_dir, "out.json")
    starter = _starter(env)
    try:
        child = starter.start([sys.executable, "-m", "probe"], None, env, pod_dir, pod_dir / "log")
        assert select.select([child._connection], [], [], 60)[0], "the pod to end"
        held = _HeldInThread(child._connection, "log-server")
        child._connection = held  # type: ignore[assignment]
        seen: list[object] = []

        def poll() -> None:
            try:
                seen.append(child.poll())
            except Exception as exc:
                seen.append(exc)

        second = threading.Thread(target=poll, name="log-server")
        second.start()
        assert held.arrived.wait(timeout=60)
        first = child.poll()
        held.release.set()
        second.join()
        assert first in (None, 0)
        assert seen == [0]
        assert child.wait(timeout=60) == 0
    finally:
        starter.close()


def test_an_exit_code_that_arrives_with_the_pid_is_seen(tmp_path: Path) -> None:
    """A pod that ends before the agent has read its pid: both lines come in one read."""
    path = f"\0kinetic-warm-test-{os.getpid()}-{threading.get_ident()}"  # abstract: no file
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(1)
    answered: list[socket.socket] = []

    def answer() -> None:
        connection, _ = listener.accept()
        connection.makefile("rb").readline()
        connection.sendall(b"4242\n0\n")  # and stays open, as a starter may for a moment
        answered.append(connection)

    starter = warm._Starter.__new__(warm._Starter)
    starter.path = path
    answering = threading.Thread(target=answer)
    answering.start()
    try:
        child = starter.start([sys.executable, "-m", "x"], None, {}, tmp_path, tmp_path / "log")
        answering.join()
        assert child.pid == 4242
        assert child.poll() == 0
    finally:
        answering.join()
        for connection in [*answered, listener]:
            connection.close()
