"""No published module holds more than 450 lines, and the job handle fewer than 350: a module
past that size usually holds two ideas, and ``JobHandle`` had grown batch-child special cases
that belong below it (issue 50). ``packages/kinetic/tests/test_layers.py`` keeps the client's
imports pointing down; this keeps its modules (and every other published package's) small."""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PUBLISHED = sorted(ROOT.glob("packages/*/src/*/**/*.py"))
MAX_LINES = 450
HANDLE = ROOT / "packages/kinetic/src/kinetic/handle.py"
MAX_HANDLE_LINES = 350


def _lines(path: Path) -> int:
    return len(path.read_text().splitlines())


def test_the_published_packages_are_all_found() -> None:
    packages = {path.relative_to(ROOT).parts[1] for path in PUBLISHED}
    assert packages == {
        "kinetic",
        "kinetic-protocol",
        "kinetic-runtime",
        "kinetic-gke",
        "kinetic-pathways",
    }


def test_no_published_module_is_longer_than_the_limit() -> None:
    too_long = {
        str(path.relative_to(ROOT)): _lines(path) for path in PUBLISHED if _lines(path) > MAX_LINES
    }
    assert too_long == {}, f"split these modules (at most {MAX_LINES} lines each)"


def test_the_job_handle_stays_short() -> None:
    assert _lines(HANDLE) < MAX_HANDLE_LINES
