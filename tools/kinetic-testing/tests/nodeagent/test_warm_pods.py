"""A pod's ``python -m kinetic_runtime`` forked from a warm interpreter is the process a new
interpreter would have been: same argv, environment, paths, session, standard streams, signal
dispositions and exit codes, with nothing of Kinetic's imported before it starts."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

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
