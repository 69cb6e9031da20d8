"""Every benchmark in ``tools/bench`` runs to the end at a small size and prints its JSON.

A benchmark nothing runs rots. These check that each one finishes and reports every figure
its docstring promises, with the right types; they assert no speed (speed goals live in the
benchmarks' own figures, never in timed assertions).
"""

import json
import math
import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from kinetic_testing.controlplane.cluster import ControlPlane

pytestmark = pytest.mark.slow

BENCH = Path(__file__).parents[1]
_QUICK_POLLS = {"KINETIC_GKE_POLL": "0.05,0.5"}
"""The scenario suites' status polls (``tests/scenarios/gke_env.py``) for the gke benchmarks:
at the default 1 to 10 s, each of their jobs waited a second or two after it had ended. Their
figures (request counts per poll included) are checked here for being there, not for what
the default cadence gives."""


def run_benchmark(
    script: str, *args: str, tmp_path: Path, settings: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """``script``'s JSON, run as a user would, with no ``KINETIC_*`` settings or
    ``PYTHONPATH`` of this process (the benchmarks choose their own) but ``settings``."""
    env = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith("KINETIC_") and name not in ("GOOGLE_CLOUD_PROJECT", "PYTHONPATH")
    }
    env["KINETIC_PROFILES_FILE"] = str(tmp_path / "profiles.json")
    env.update(settings or {})
    done = subprocess.run(
        [sys.executable, str(BENCH / script), *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=BENCH.parents[1],  # the repository, as the README runs them
        timeout=240,
        check=False,
    )
    assert done.returncode == 0, f"{script} failed:\n{done.stderr[-6000:]}"
    report = json.loads(done.stdout)
    assert isinstance(report, dict)
    return report


def assert_figures(section: object, *names: str) -> None:
    """``section`` holds each of ``names`` as a finite, non-negative number."""
    assert isinstance(section, dict), section
    for name in names:
        value = section.get(name)
        assert isinstance(value, int | float), (name, section)
        assert not isinstance(value, bool), (name, section)
        assert math.isfinite(value), (name, section)
        assert value >= 0, (name, section)


def assert_about_this_machine(report: dict[str, Any]) -> None:
    assert report["cpus"] == os.cpu_count()
    assert isinstance(report["python"], str)
    assert report["python"] == sys.version.split()[0]


_SUMMARY = ("wall_s", "submissions_per_s", "per_item_overhead_ms")


def test_batch_local_compares_kinetic_submitit_and_a_pool_then_attaches(
    tmp_path: Path,
) -> None:
    report = run_benchmark(
        "batch_local.py", "--n", "2", "--attach-children", "20", tmp_path=tmp_path
    )
    assert_about_this_machine(report)
    assert report["n"] == 2
    assert report["project"] == "one module"
    assert_figures(report["kinetic_local"], *_SUMMARY, "slots")
    assert_figures(report["submitit_local"], *_SUMMARY)
    assert_figures(report["process_pool"], *_SUMMARY, "workers")
    assert_figures(report["attach_batch"], "children", "attach_s", "handle_memory_mib")
    assert report["attach_batch"]["children"] == 20


@pytest.mark.parametrize(
    ("args", "project"),
    [((), "one module"), (("--in-repo",), "this repository")],
    ids=["one-module", "in-repo"],
)
def test_job_local_reports_job_overhead_and_the_runtime_import_time(
    tmp_path: Path, args: tuple[str, ...], project: str
) -> None:
    """``--in-repo`` jobs import the workload from this repository's code bundle, so this
    fails if the bundle leaves the module out."""
    report = run_benchmark(
        "job_local.py", "--n", "2", "--import-runs", "1", *args, tmp_path=tmp_path
    )
    assert report["n"] == 2
    assert report["project"] == project
    assert_figures(report["submit_to_succeeded_ms"], "median", "p90", "min")
    assert_figures(report["submit_only_ms"], "median")
    assert_figures(report["import_ms"], "kinetic", "kinetic_runtime.main")
    assert report["import_ms"]["kinetic_runtime.main"] > 0


@pytest.mark.gcs
def test_data_upload_measures_cold_and_cached_submissions(tmp_path: Path) -> None:
    report = run_benchmark("data_upload.py", "--mib", "1", "--files", "20", tmp_path=tmp_path)
    assert report["dataset"] == {"files": 20, "mib": 1.0}
    assert report["cpus"] == os.cpu_count()
    assert isinstance(report["store"], str)
    assert_figures(
        report,
        "load_average_1m",
        "resubmit_same_object_s",
        "resubmit_new_process_s",
        "resubmit_without_digest_cache_s",
    )
    assert_figures(
        report["cold"],
        "hash_s",
        "hash_mib_per_s",
        "upload_s",
        "upload_mib_per_s",
        "total_s",
        "total_mib_per_s",
    )
    assert isinstance(report["goal_resubmit_under_1s"], bool)


_SUBMISSION = (
    "n",
    "submit_wall_s",
    "submissions_per_s",
    "client_cpu_ms_per_child",
    "store_writes_per_child",
    "attach_batch_s",
)


@pytest.mark.gcs
def test_batch_gke_submits_attaches_and_polls_on_the_session_cluster(
    tmp_path: Path, real_k8s: ControlPlane, k8s_namespace: str, gcs_bucket: str
) -> None:
    """On this session's control plane and fake-gcs-server (``STORAGE_EMULATOR_HOST`` is
    inherited), not ones of its own: starting them would double the test's time."""
    report = run_benchmark(
        "batch_gke.py",
        "--n",
        "3",
        "--large",
        "20",
        "--large-running",
        "10",
        "--kubeconfig",
        str(real_k8s.kubeconfig),
        "--context",
        real_k8s.context,
        "--namespace",
        k8s_namespace,
        "--store",
        gcs_bucket,
        tmp_path=tmp_path,
        settings=_QUICK_POLLS,
    )
    assert_about_this_machine(report)
    for backend in ("local", "gke", "gke_per_child"):
        section = report[backend]
        assert_figures(section, *_SUBMISSION)
        assert section["n"] == 3
        writes = section["store_writes"]
        assert writes, section
        assert all(isinstance(k, str) and isinstance(v, int) for k, v in writes.items())
    for path in ("gke", "gke_per_child"):
        assert_figures(report[path], "status_poll_s", "api_calls_per_poll", "k8s_writes")
        assert report[path]["api_calls_per_poll"] >= 1
        assert_figures(report[path], "pods_created_s", "pods_created_per_s")
        assert report[path]["pods_created"] == 3  # the cluster created every input's pod
    assert report["gke"]["k8s_writes"] < report["gke_per_child"]["k8s_writes"]
    kueue = report["gke_kueue"]
    assert_figures(kueue, *_SUBMISSION[:-1], "status_poll_s", "admitted_s", "queued_poll_s")
    assert kueue["workloads"] == 1, "a batch is one Kueue Workload"
    assert kueue["pods_created"] == 3
    assert kueue["queued_place"]["queue"] == "bench-held"
    assert kueue["queued_place"]["position"] == 1
    large = report["gke_large"]
    assert_figures(large, *_SUBMISSION, "k8s_writes")
    assert (large["n"], large["settled"], large["running"]) == (20, 11, 9)
    assert large["statuses"] == {"SUCCEEDED": 10, "FAILED": 1, "PENDING": 9}
    for poll in ("first_poll", "next_poll"):
        assert_figures(large[poll], "s", "api_calls", "bytes_on_the_wire", "bytes_decoded")
    jobs = real_k8s.request("GET", f"/apis/batch/v1/namespaces/{k8s_namespace}/jobs")
    # The warm-up's Indexed Job, the array batch's, one per input of the per-child batch, the
    # large batch's warm-up, and through Kueue the warm-up's and the array batch's (the large
    # and the queued batches were cancelled).
    assert len(jobs["items"]) == 1 + 1 + 3 + 1 + 1 + 1


_PROGRAM = ("program_s", "first_step_s", "steps_per_s", "final_loss", "call_s")


def test_ml_workloads_runs_jax_and_keras_through_kinetic_as_in_process(tmp_path: Path) -> None:
    """The job gets no ``KERAS_BACKEND``: Keras in it must still run on JAX (Kinetic's
    default), and with the same seeds both runs end at the same loss."""
    report = run_benchmark("ml_workloads.py", "--width", "8", "--steps", "2", tmp_path=tmp_path)
    assert report["accelerator"] == "cpu"
    for program in ("jax", "keras"):
        runs = report[program]
        for run in runs.values():
            assert_figures(run, *_PROGRAM)
            assert run["platform"] == "cpu"
        assert runs["kinetic"]["final_loss"] == runs["in_process"]["final_loss"]
    assert report["keras"]["kinetic"]["backend"] == "jax"


def test_batch_bookkeeping_reports_writes_and_verification_per_child(tmp_path: Path) -> None:
    report = run_benchmark("batch_bookkeeping.py", "--children", "20", tmp_path=tmp_path)
    assert_about_this_machine(report)
    assert report["children"] == 20
    assert report["writes"]["signed"] == report["writes"]["plain"] == 22
    assert_figures(report["writes"], "added_per_child")
    assert_figures(report["bytes_per_child_record"], "signed", "plain")
    assert_figures(report["listing_s"], "signed_first", "signed_again", "plain_names_only")
    assert_figures(report["in_memory_us"], "seal", "verify")
    assert_figures(report, "verify_us_per_child")


def test_attempt_cost_counts_api_and_store_requests_on_the_session_cluster(
    tmp_path: Path, real_k8s: ControlPlane, k8s_namespace: str
) -> None:
    """On this session's control plane, with a fake-gcs-server of its own (it counts the
    requests of every process, the job's pod included)."""
    report = run_benchmark(
        "attempt_cost.py",
        "--seconds",
        "1",
        "--kubeconfig",
        str(real_k8s.kubeconfig),
        "--context",
        real_k8s.context,
        "--namespace",
        k8s_namespace,
        tmp_path=tmp_path,
        settings=_QUICK_POLLS,
    )
    assert_about_this_machine(report)
    for case in ("kept", "not_kept", "failed"):
        section = report[case]
        assert section["client_api"].get("POST", 0) >= 1, "the Job was created"
        assert section["pod_store"].get("upload", 0) >= 1, "the pod stored its result"
        assert_figures(section, "wall_s")
    added = report["added_by_kept_output"]["pod_store"]
    assert added.get("upload", 0) >= 1, "keeping the output writes it at least once"
