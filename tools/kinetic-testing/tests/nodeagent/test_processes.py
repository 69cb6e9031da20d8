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
