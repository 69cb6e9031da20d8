"""Pytest fixtures shared by every test tier; loaded for the whole workspace via ``-p``.

Importing this module starts nothing: the fake GCS server starts the first time a test asks
for ``fake_gcs`` (or ``gcs_bucket``) and stops at the end of the session.
"""

import os
import uuid
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import Any

import pytest

from kinetic_testing.bytecode import precompile_workspace, writing_bytecode
from kinetic_testing.client_fixtures import clean_kinetic_env, kinetic_session
from kinetic_testing.controlplane.fixtures import (
    AGENT,
    MARKER,
    NAMESPACE,
    REQUIRE_ENV,
    k8s_binaries,
    k8s_namespace,
    node_agent,
    prepare_binaries,
    real_k8s,
    required,
    uses_real_k8s,
)
from kinetic_testing.controlplane.snapshot import namespace_snapshot
from kinetic_testing.fake_gcs import FakeGcsServer
from kinetic_testing.images import fixtures as image_tier
from kinetic_testing.images.build_api import buildah_cloud_build, local_images
from kinetic_testing.images.fixtures import image_builds, oci_images
from kinetic_testing.project_files import write
from kinetic_testing.users import shared_dir
from kinetic_testing.warm_pods import COLD as _COLD_PODS  # noqa: F401  (read before tests run)

__all__ = [
    "buildah_cloud_build",
    "clean_kinetic_env",
    "fake_gcs",
    "gcs_bucket",
    "image_builds",
    "k8s_binaries",
    "k8s_namespace",
    "kinetic_session",
    "local_images",
    "node_agent",
    "oci_images",
    "real_k8s",
    "shared_dir",
    "write",
]

# No test may reach the GCE metadata server: google-auth would probe it for credentials (and
# reads this once, at import), so code that looks for Google credentials fails fast instead.
os.environ.setdefault("NO_GCE_CHECK", "true")

_skipped_real_k8s: list[str] = []
_skipped_images: list[str] = []
_skipped_accelerator_images: list[str] = []

ALREADY_RUN_ENV = "KINETIC_TESTS_ALREADY_RUN"
"""Test directories (``os.pathsep``-separated, relative to the root) that this run leaves out
because they already ran: ``.ci/run`` runs each backend package's tests in an environment
without the client first, then the README's command, which would otherwise run them again."""
_left_out: set[str] = set()
WORKERS_ENV = "KINETIC_TEST_WORKERS"
EXTRA_WORKERS = 1
"""Workers beyond one per CPU: each waits on jobs' processes and controllers' delays about half
its time. On 2 cores, back to back in one checkout, four workers ran the suite in 535 s and
three in 571 s for the same CPU; from fresh clones, four took 590 and 598 s (about 100 CPU-s
more) and three 570 to 575 s. No reliable gain, and more load on a shared machine: three."""
MAX_DEFAULT_WORKERS = 8
"""Each worker runs a control plane of its own (about 1.5 GiB with it)."""
_ALREADY_RUN = pytest.StashKey[dict[Path, str]]()


def pytest_configure(config: pytest.Config) -> None:
    """Resolve the directories that already ran once, not for every path collected; compile
    the workspace's packages once (the controlling process, before any worker starts)."""
    if not hasattr(config, "workerinput"):
        precompile_workspace(config.rootpath)
    entries = filter(None, os.environ.get(ALREADY_RUN_ENV, "").split(os.pathsep))
    config.stash[_ALREADY_RUN] = {(config.rootpath / e).resolve(): e for e in entries}


@pytest.hookimpl(wrapper=True)
def pytest_collection() -> Generator[None, object, object]:
    """Collect (which imports every test module) with bytecode writing on: a worker then loads
    each module's rewritten code instead of rewriting it (collection 7.2 s of CPU, then 4.4)."""
    with writing_bytecode():
        return (yield)


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    entry = config.stash[_ALREADY_RUN].get(collection_path)
    if entry is None:
        return None
    _left_out.add(entry)
    return True


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark the control plane tier before ``-m`` selects (so ``-m "not realk8s"`` leaves it out);
    run the image tier first (see ``image_tier_first``)."""
    for item in items:
        if uses_real_k8s(item):
            item.add_marker(MARKER)
    image_tier.image_tier_first(items)


def pytest_collection_finish(session: pytest.Session) -> None:
    """Build the real control plane before any selected test of its tier runs (never under a
    test's timeout, never for a collection alone), or skip the tier with one line where it
    cannot be built (no Go toolchain)."""
    _prepare_image_tier(session)
    tier = [item for item in session.items if item.get_closest_marker(MARKER)]
    if not tier:
        return
    problem = prepare_binaries(session.config, build=not session.config.option.collectonly)
    if problem is None:
        return
    if required():
        raise pytest.UsageError(f"{REQUIRE_ENV} is set, but: {problem}")
    _skipped_real_k8s.append(problem)
    for item in tier:
        item.add_marker(pytest.mark.skip(reason=problem))


def _prepare_image_tier(session: pytest.Session) -> None:
    """Build the stand-in base images before any test of the image tier runs, or skip the
    tier with one line where buildah or debootstrap is missing."""
    tier = [item for item in session.items if image_tier.uses_images(item)]
    gated = [item for item in tier if item.get_closest_marker(image_tier.ACCELERATOR_MARKER)]
    if gated and not image_tier.builds_accelerator_images():
        _skipped_accelerator_images.append(image_tier.ACCELERATOR_SKIP)
        for item in gated:
            item.add_marker(pytest.mark.skip(reason=image_tier.ACCELERATOR_SKIP))
        tier = [item for item in tier if item not in gated]
    if not tier:
        return
    problem = image_tier.prepare(session.config, build=not session.config.option.collectonly)
    if problem is None:
        return
    if image_tier.required():
        raise pytest.UsageError(f"{image_tier.REQUIRE_ENV} is set, but: {problem}")
    _skipped_images.append(problem)
    for item in tier:
        item.add_marker(pytest.mark.skip(reason=problem))


def _summary_lines() -> list[str]:
    lines = [f"{entry}: not run again here, it ran already ({ALREADY_RUN_ENV})"
             for entry in sorted(_left_out)]  # fmt: skip
    lines += [
        f"{reason} (install Go 1.26+ and rerun: the binaries build once, cached)"
        for reason in _skipped_real_k8s
    ]
    lines += [f"{reason} ({image_tier.ENABLE_HINT})" for reason in _skipped_images]
    return lines + _skipped_accelerator_images + image_tier.BUILD_LINES


_WORKER_LINES = "kinetic_summary_lines"
_from_workers: dict[str, None] = {}
"""Summary lines the test workers sent (``pytest -n``), each once, in the order first seen."""


def pytest_sessionfinish(session: pytest.Session) -> None:
    """A test worker hands its summary lines to the controlling process, which prints them."""
    output = getattr(session.config, "workeroutput", None)
    if output is not None:
        output[_WORKER_LINES] = _summary_lines()


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: object) -> None:
    for line in getattr(node, "workeroutput", {}).get(_WORKER_LINES, []):
        _from_workers.setdefault(line)


@pytest.hookimpl(optionalhook=True, tryfirst=True)  # before xdist's own (one per CPU)
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """How many test workers ``-n auto`` (the default) starts: the whole suite (no paths
    named) runs on :func:`suite_workers`, because most of its time is spent waiting on jobs'
    processes and the control plane rather than on a CPU; a run of chosen paths stays in one
    process (quick to start, easy to debug). ``KINETIC_TEST_WORKERS`` overrides both (``auto``:
    as many as the whole suite gets)."""
    chosen = os.environ.get(WORKERS_ENV, "")
    if chosen == "auto":
        return suite_workers()
    if chosen:
        try:
            workers = int(chosen)
        except ValueError:
            raise pytest.UsageError(
                f"{WORKERS_ENV}={chosen!r} is not a number of test workers: use 0 (one "
                "process) or more, or auto"
            ) from None
        return max(workers, 0)
    whole_suite = config.args_source is pytest.Config.ArgsSource.TESTPATHS
    return suite_workers() if whole_suite else 0


def suite_workers() -> int:
    """One worker more than the CPUs this process may run on, at least two, at most eight."""
    cpus = len(os.sched_getaffinity(0))
    return max(2, min(cpus + EXTRA_WORKERS, MAX_DEFAULT_WORKERS))


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    for line in dict.fromkeys([*_summary_lines(), *_from_workers]):
        terminalreporter.write_line(line)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """Attach what the test's namespace held, and the control plane's component logs, to a
    failing test of that tier."""
    report = yield
    if not report.failed:
        return report
    used = item.stash.get(NAMESPACE, None)
    if used is not None:
        report.sections.append(("namespace", namespace_snapshot(*used)))
    agent = item.stash.get(AGENT, None)
    if agent is not None and report.when == "call":
        from kinetic_testing.nodeagent.stacks import process_stacks

        report.sections.append(("pod process stacks", process_stacks(agent.kubelet.running())))
    plane = used[0] if used is not None else getattr(item, "funcargs", {}).get("real_k8s")
    if plane is not None:
        report.sections.append(("control plane logs", plane.log_tails()))
    return report


_EMULATOR_ENV = "STORAGE_EMULATOR_HOST"


@pytest.fixture(scope="session")
def fake_gcs() -> Iterator[FakeGcsServer]:
    """A fake-gcs-server for the session, with ``STORAGE_EMULATOR_HOST`` pointing at it.

    The previous value of ``STORAGE_EMULATOR_HOST`` is restored when the session ends.
    """
    with FakeGcsServer() as server:
        patch = pytest.MonkeyPatch()
        patch.setenv(_EMULATOR_ENV, server.endpoint)
        try:
            yield server
        finally:
            patch.undo()


@pytest.fixture
def gcs_bucket(fake_gcs: FakeGcsServer) -> str:
    """A new, empty, uniquely named bucket on the fake server, as ``gs://NAME``."""
    name = f"kinetic-test-{uuid.uuid4().hex[:16]}"
    fake_gcs.create_bucket(name)
    return f"gs://{name}"
