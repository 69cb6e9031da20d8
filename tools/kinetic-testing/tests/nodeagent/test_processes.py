"""A pod's process killed by the agent is always reaped, even when it outlives the wait."""

import gc
import sys
import threading
import warnings
from pathlib import Path

from kinetic_testing.nodeagent.processes import PodProcess


def test_a_process_not_reaped_within_the_wait_is_reaped_later_and_never_warns(
    tmp_path: Path,
) -> None:
    process = PodProcess(
        [sys.executable, "-c", "import time; time.sleep(60)"], {}, tmp_path, tmp_path / "log"
    )
    popen = process._popen
    process.reap(timeout=0)  # no time at all to reap it: as on a loaded machine
    for reaper in [t for t in threading.enumerate() if t.name == "nodeagent-reap"]:
        reaper.join(timeout=30)
    assert popen.returncode == -9, "the killed process was reaped, not left a zombie"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        del process, popen
        gc.collect()
    assert [w for w in caught if issubclass(w.category, ResourceWarning)] == []


def test_a_hung_pods_processes_show_the_line_they_wait_on(tmp_path: Path) -> None:
    from kinetic_testing.nodeagent.stacks import process_stacks

    script = tmp_path / "hangs.py"
    script.write_text(
        "import os, sys, time\n"
        "def wait_for_ever():\n"
        "    sys.stdout.write('ready\\n'); sys.stdout.flush()\n"
        "    time.sleep(600)\n"
        "if os.fork() == 0:\n"  # a second process in the pod's group, as the output keeper
        "    wait_for_ever()\n"
        "wait_for_ever()\n"
    )
    log = tmp_path / "log"
    process = PodProcess([sys.executable, str(script)], {}, tmp_path, log)
    try:
        with open(log) as reader:  # both processes are in the function once both said so
            said = 0
            while said < 2:
                said += reader.readline() == "ready\n"
        shown = process_stacks({"ns/hung": process.pid})
    finally:
        process.reap(timeout=5)
    assert shown.count("--- pod ns/hung, pid ") == 2, shown
    assert shown.count("wait_for_ever (hangs.py:4)") == 2, shown


def test_a_container_has_exited_only_once_no_process_of_it_runs(tmp_path: Path) -> None:
    """Its first process gone, a child that ignores SIGTERM still runs until the group's kill."""
    script = tmp_path / "leaves_a_child.py"
    script.write_text(
        "import subprocess, sys\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import signal, time\\n"
        'signal.signal(signal.SIGTERM, signal.SIG_IGN)\\nprint("ready", flush=True)\\n'
        "time.sleep(600)'], stdout=subprocess.PIPE, text=True)\n"
        "child.stdout.readline()\n"
        "print(child.pid, flush=True)\n"
    )
    log = tmp_path / "log"
    process = PodProcess([sys.executable, str(script)], {}, tmp_path, log)
    try:
        assert process._popen.wait(timeout=60) == 0
        child = int(log.read_text().split()[0])
        process.terminate(grace=60)
        assert not process.await_group_exit(0.2), "the child ignoring SIGTERM still runs"
        process.kill()
        assert process.await_group_exit(30)
        stat = Path(f"/proc/{child}/stat")
        assert not stat.exists() or stat.read_text().rsplit(")", 1)[1].split()[0] == "Z"
    finally:
        process.kill()
