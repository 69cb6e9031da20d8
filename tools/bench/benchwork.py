"""The benchmarks' workload: trivial functions, so what is measured is the runner's overhead.

Tracked (not generated) so that ``--in-repo`` runs find it in this repository's code bundle;
``workload.small_project`` copies it into a one-module project for the default runs.
"""


def noop() -> None:
    """Nothing: what is measured is the runner's own overhead."""


def square(x: int) -> int:
    return x * x


def chatty(seconds: float, fails: bool = False) -> int:
    """A line every half second for ``seconds``: a job whose output is worth keeping."""
    import time

    lines = int(seconds * 2)
    for line in range(lines):
        print(f"line {line}", flush=True)
        time.sleep(0.5)
    if fails:
        raise RuntimeError(f"failed after {lines} lines")
    return lines
