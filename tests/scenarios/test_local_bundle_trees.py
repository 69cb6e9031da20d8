"""Local jobs of one code bundle run this machine's one unpacked tree of it, overlaid at their
working directories (``kinetic_runtime.bundle_trees``): the second job makes none of its files,
each job's writes stay in its own directory, and deleting a job deletes them (issue 53)."""

from pathlib import Path

import scenario_funcs as uf
from scenario_support import ScenarioBackend


def test_local_jobs_of_one_bundle_run_its_one_tree_and_deleting_one_leaves_nothing(
    local_backend: ScenarioBackend, isolated_kinetic: Path
) -> None:
    remote = local_backend.decorate()(uf.code_file_inode)
    jobs = [remote.run_async(), remote.run_async()]
    inodes = [job.result(timeout=60, cleanup=False) for job in jobs]

    bundles = isolated_kinetic / "local" / "bundles"
    trees = [p for p in bundles.iterdir() if p.is_dir()]
    assert len(trees) == 1, trees
    assert inodes == [(trees[0] / "scenario_funcs.py").stat().st_ino] * 2
    assert not list(trees[0].rglob("written-by-the-job.txt"))
    for job in jobs:
        job_dir = isolated_kinetic / "local" / "jobs" / job.job_id
        assert list((job_dir / "work").iterdir()) == []  # a mount point, inside the job only
        [written] = (job_dir / "work-overlay" / "upper").rglob("written-by-the-job.txt")
        assert written.read_text() == job.job_id
        job.cleanup(k8s=True, gcs=True)
        assert not job_dir.exists()
