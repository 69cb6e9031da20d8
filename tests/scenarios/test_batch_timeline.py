"""A batch's timeline, end to end on the local backend: a success, a retry that succeeds, a
failure after its retry, a submission failure and a cancellation, each drawn as itself."""

import shutil
import threading
from pathlib import Path
from typing import Any

import batch_userfuncs as uf
import pytest
from batch_support import four_local_slots  # noqa: F401 (an autouse fixture)
from click.testing import CliRunner
from scenario_support import ScenarioBackend, wait_until

import kinetic
from kinetic.batch.timeline import BatchTimeline, Outcome
from kinetic.batch.timeline_plot import PENDING_TRACE, SUBMISSION_FAILED_TRACE
from kinetic.cli import cli
from kinetic_protocol import ConfigError, FailureCause, JobStatus


@pytest.fixture
def mixed_batch(local_backend: ScenarioBackend, tmp_path: Path) -> Any:
    """Inputs: 0 succeeds; 1 fails once then succeeds; 2 fails both attempts; 3 cannot be
    pickled (its submission fails); 4 runs until the batch is cancelled."""
    step = local_backend.decorate()(uf.step)
    started, never = tmp_path / "4-started", tmp_path / "never"
    batch = step.run_async_map(
        [
            {"value": "first try"},
            {"value": "second try", "fail_first": str(tmp_path / "failed-once")},
            {"value": "never", "fail": "always broken"},
            {"value": threading.Lock()},
            {"value": "cancelled", "create": str(started), "wait_for": str(never)},
        ],
        retries=1,
    )

    def others_settled() -> bool:
        jobs = batch.jobs
        if jobs[1] is None or jobs[2] is None or jobs[1].attempt < 1 or jobs[2].attempt < 1:
            return False
        states = dict(batch.statuses())
        return all(states.get(i) in (JobStatus.SUCCEEDED, JobStatus.FAILED) for i in (0, 1, 2))

    wait_until(others_settled, "inputs 0-2 to settle after their retries", timeout=90)
    wait_until(started.exists, "input 4 to start running", timeout=60)
    batch.cancel()
    return batch


def _trace(figure: Any, name: str) -> Any:
    found = [trace for trace in figure.data if trace.name == name]
    assert len(found) == 1, [trace.name for trace in figure.data]
    return found[0]


def test_the_timeline_shows_retries_failures_submission_failures_and_cancellation(
    mixed_batch: Any, tmp_path: Path
) -> None:
    timeline: BatchTimeline = mixed_batch.timeline()
    outcomes = {(a.index, a.attempt): a.outcome for a in timeline.attempts}
    assert outcomes == {
        (0, 0): Outcome.SUCCEEDED,
        (1, 0): Outcome.RETRIED,
        (1, 1): Outcome.SUCCEEDED,
        (2, 0): Outcome.RETRIED,
        (2, 1): Outcome.FAILED,
        (4, 0): Outcome.CANCELLED,
    }
    assert [f.index for f in timeline.submission_failures] == [3]
    assert timeline.submission_failures[0].exc_type == "SerializationError"
    by_key = {(a.index, a.attempt): a for a in timeline.attempts}
    for item in timeline.attempts:
        assert item.started_at is not None, f"{item.job_id} ran, so its start is recorded"
        assert item.finished_at is not None
        assert item.submitted_at <= item.started_at <= item.finished_at
    assert by_key[1, 1].submitted_at >= by_key[1, 0].finished_at, "a retry follows its failure"
    assert by_key[4, 0].reason == "the batch was cancelled"
    assert "BatchUserError: always broken" in by_key[2, 1].reason
    causes = {key: a.cause for key, a in by_key.items()}
    user, cancelled_by = FailureCause.USER, FailureCause.CANCELLED
    assert causes == {
        (0, 0): None,
        (1, 0): user,
        (1, 1): None,
        (2, 0): user,
        (2, 1): user,
        (4, 0): cancelled_by,
    }

    figure = timeline.figure()
    rows = lambda trace: list(trace.y)  # noqa: E731
    assert rows(_trace(figure, "succeeded")) == ["input 0", "input 1"]
    assert rows(_trace(figure, "failed, retried: user")) == ["input 1", "input 2"]
    assert rows(_trace(figure, "failed: user")) == ["input 2"]
    assert rows(_trace(figure, "cancelled")) == ["input 4"]
    assert rows(_trace(figure, SUBMISSION_FAILED_TRACE)) == ["input 3"]
    assert len(_trace(figure, PENDING_TRACE).y) == 6, "every attempt waited, however briefly"
    assert {trace.name for trace in figure.data} == {
        "succeeded",
        "failed, retried: user",
        "failed: user",
        "cancelled",
        SUBMISSION_FAILED_TRACE,
        PENDING_TRACE,
    }
    cancelled = _trace(figure, "cancelled")
    assert cancelled.customdata[0][0] == by_key[4, 0].job_id
    assert by_key[4, 0].job_id in cancelled.hovertext[0]
    assert "the batch was cancelled" in cancelled.hovertext[0]
    failed = _trace(figure, "failed: user")
    assert "always broken" in failed.hovertext[0] and "ran " in failed.hovertext[0]
    assert "cause: user" in failed.hovertext[0]
    assert all(width >= 0 for trace in figure.data if trace.type == "bar" for width in trace.x)
    summary = timeline.summary()
    assert summary.attempts == 6 and summary.wall_seconds > 0
    assert summary.run_p50 is not None and summary.run_p95 is not None
    assert 0 < summary.busy_fraction <= 1
    assert summary.causes == {user: 3, cancelled_by: 1}
    assert "ended without a value: 3 user, 1 cancelled" in summary.describe()
    assert summary.describe() in figure.layout.title.text

    # A reattached handle draws the same picture from the store alone.
    again = kinetic.attach_batch(mixed_batch.group_id, backend="local").timeline()
    assert {(a.index, a.attempt): a.outcome for a in again.attempts} == outcomes

    # ... and so does the CLI, to a self-contained HTML file.
    out = tmp_path / "timeline.html"
    result = CliRunner().invoke(
        cli, ["--backend", "local", "batch", "timeline", mixed_batch.group_id, "--out", str(out)]
    )
    assert result.exit_code == 0, result.output
    assert "busy" in result.output and str(out) in result.output
    html = out.read_text()
    assert "plotly" in html and by_key[4, 0].job_id in html
    assert "<script src=" not in html, "plotly.js is inlined: the file opens offline"


def test_a_timeline_file_with_an_unknown_suffix_is_refused_before_anything_is_read(
    tmp_path: Path,
) -> None:
    result = CliRunner().invoke(
        cli, ["--backend", "local", "batch", "timeline", "grp-none", "--out", "t.pdf"]
    )
    assert result.exit_code != 0
    assert "t.pdf" in result.output and ".html, .svg, .png" in result.output
    assert "No batch" not in result.output
    empty = BatchTimeline("grp-x", None, 0, [], [], taken_at=_now())
    with pytest.raises(ConfigError, match="must end in"):
        empty.write(tmp_path / "t.jpeg")
    with pytest.raises(ConfigError, match="no directory"):
        empty.write(tmp_path / "missing" / "t.html")


@pytest.mark.skipif(
    shutil.which("chromium") is None, reason="needs chromium (apt-get install chromium)"
)
def test_svg_and_png_timelines_are_drawn_with_the_local_chromium(tmp_path: Path) -> None:
    empty = BatchTimeline("grp-x", "empty", 2, [], [], taken_at=_now())
    svg = empty.write(tmp_path / "t.svg").read_text()
    assert svg.lstrip().startswith("<svg") and "grp-x" in svg
    png = empty.write(tmp_path / "t.png").read_bytes()
    assert png.startswith(b"\x89PNG")


def _now() -> Any:
    from datetime import UTC, datetime

    return datetime.now(UTC)


@pytest.mark.parametrize("suffix", [".png", ".svg"])
def test_an_image_timeline_without_a_browser_says_what_to_install_and_that_html_needs_none(
    local_backend: ScenarioBackend,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    suffix: str,
) -> None:
    """The real plotly and kaleido, with no browser to find (``BROWSER_PATH`` names none):
    plotly raises its own RuntimeError about Google Chrome, which is no Kinetic bug."""
    batch = local_backend.decorate()(uf.square).run_async_map([2])
    assert batch.results(cleanup=False) == [4]
    monkeypatch.setenv("BROWSER_PATH", str(tmp_path / "no-browser-here"))
    out = tmp_path / f"t{suffix}"
    args = ["--backend", "local", "batch", "timeline", batch.group_id, "--out", str(out)]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 1, result.output
    assert "Unexpected" not in result.output and "report it" not in result.output
    message = " ".join(result.output.split())
    assert "needs a Chromium" in message and "apt-get install chromium" in message
    assert "An .html timeline needs no browser" in message
    assert not out.exists()
    html = tmp_path / "t.html"
    args[-1] = str(html)
    assert CliRunner().invoke(cli, args).exit_code == 0  # the same machine writes HTML
    assert html.stat().st_size > 0
