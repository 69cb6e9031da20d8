"""The benchmarks' workload: trivial functions, so what is measured is the runner's overhead.

Tracked (not generated) so that ``--in-repo`` runs find it in this repository's code bundle;
``workload.small_project`` copies it into a one-module project for the default runs.
"""


def noop() -> None:
    """Nothing: what is measured is the runner's own overhead."""


def square(x: int) -> int:
    return x * x
