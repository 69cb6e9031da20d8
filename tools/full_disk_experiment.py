"""A full disk under a batch, for real: the experiment of issue 47.

Each turn submits a batch of ``--inputs`` inputs (``retries=2``) on the local backend, with the
Kinetic home (its store and its jobs' directories) on a small tmpfs. A second after the
submission starts, the tmpfs is filled to its last byte for ``--seconds``, then freed. The turn
then resumes the batch from a fresh handle (when there is anything to resume) and collects it
with cleanup. It prints, per turn, how many inputs got their value, what resume said, each
error and the job directories left behind, then the total::

    sudo python -m uv run tools/full_disk_experiment.py --turns 3 --inputs 60 --seconds 3

Needs root (it mounts the tmpfs, under ``--root``, and unmounts it at the end).
"""

import argparse
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from kinetic_testing.full_disk import Tmpfs

FUNCTION = """
import os, time
from pathlib import Path

def traced(index, runs, seconds=0.0):
    with (Path(runs) / str(index)).open("a") as trace:
        trace.write(os.environ.get("KINETIC_JOB_ID", "?") + "\\n")
    time.sleep(seconds)
    return index * index
"""


def _fill(home: Path, seconds: float) -> None:
    """Fill ``home``'s tmpfs to its last byte, hold it full, then free it."""
    with Tmpfs(home).full():
        time.sleep(seconds)


def _turn(number: int, root: Path, options: argparse.Namespace) -> dict[str, Any]:
    import expfuncs  # type: ignore[import-not-found]  # written into the project below

    import kinetic

    runs = root / f"runs-{number}"
    runs.mkdir(exist_ok=True)
    traced = kinetic.run(accelerator="cpu", backend="local")(expfuncs.traced)
    batch = traced.run_async_map(
        [{"index": i, "runs": str(runs), "seconds": 0.3} for i in range(options.inputs)],
        retries=2,
        max_concurrent=options.max_concurrent or None,
    )
    time.sleep(1.0)
    filler = threading.Thread(target=_fill, args=(root / "home", options.seconds))
    filler.start()
    filler.join()
    batch.wait_submitted(timeout=300)
    attached = kinetic.attach_batch(batch.group_id, backend="local")
    try:
        said = attached.resume()
        attached.wait_submitted(timeout=300)
    except Exception as exc:
        said = f"{type(exc).__name__}: {exc}"
    outcomes = attached.results(timeout=300, cleanup=True, return_exceptions=True)
    errors: dict[str, list[int]] = {}
    for index, outcome in enumerate(outcomes):
        if outcome != index * index:
            errors.setdefault(f"{type(outcome).__name__}: {outcome}"[:300], []).append(index)
    jobs = root / "home" / "local" / "jobs"
    return {
        "turn": number,
        "valued": sum(1 for index, outcome in enumerate(outcomes) if outcome == index * index),
        "resume": said[:200],
        "errors": errors,
        "job_dirs_left": sorted(p.name for p in jobs.iterdir()) if jobs.exists() else [],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=3)
    parser.add_argument("--inputs", type=int, default=60)
    parser.add_argument("--seconds", type=float, default=3.0, help="how long the disk is full")
    parser.add_argument("--max-concurrent", type=int, default=8, help="0: no limit")
    parser.add_argument("--root", type=Path, default=Path("/tmp/kinetic-full-disk"))
    options = parser.parse_args()
    root, home, project = options.root, options.root / "home", options.root / "project"
    home.mkdir(parents=True, exist_ok=True)
    project.mkdir(exist_ok=True)
    (project / "pyproject.toml").write_text('[project]\nname = "experiment"\nversion = "0"\n')
    (project / "expfuncs.py").write_text(FUNCTION)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs", str(home)], check=True)
    os.environ.update(
        KINETIC_HOME=str(home),
        KINETIC_LOCAL_SLOTS="8",
        KINETIC_BATCH_HEARTBEAT="0.2",
        KINETIC_BATCH_LEASE="2",
    )
    os.chdir(project)
    sys.path.insert(0, str(project))
    valued = 0
    try:
        for number in range(options.turns):
            turn = _turn(number, root, options)
            valued += turn["valued"]
            print(json.dumps(turn), flush=True)
    finally:
        subprocess.run(["umount", "--lazy", str(home)], check=False)
    print(f"{valued} of {options.turns * options.inputs} inputs got their value after resume")


if __name__ == "__main__":
    main()
