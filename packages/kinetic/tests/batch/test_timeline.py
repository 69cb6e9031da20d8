"""A timeline's numbers and drawing, from hand-made attempts (the end-to-end timeline of a real
batch is in tests/scenarios/test_batch_timeline.py)."""

import sys
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from kinetic.batch.timeline import Attempt, BatchTimeline, Outcome
from kinetic.batch.timeline_plot import PENDING_TRACE
from kinetic_protocol import FailureCause, KineticError

T0 = datetime(2026, 11, 25, 12, 0, tzinfo=UTC)


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def attempt(
    index: int, outcome: Outcome, submitted: float, started: float | None, finished: float | None
) -> Attempt:
    return Attempt(
        index=index,
        attempt=0,
        job_id=f"job-{index}",
        outcome=outcome,
        reason="",
        submitted_at=at(submitted),
        started_at=None if started is None else at(started),
        finished_at=None if finished is None else at(finished),
    )


def timeline(*attempts: Attempt, taken_at: float = 100) -> BatchTimeline:
    return BatchTimeline("grp-1", None, 4, list(attempts), [], taken_at=at(taken_at))


def test_summary_wall_busy_fraction_and_percentiles() -> None:
    # Two attempts run side by side for 10 s each, a third alone for 20 s: wall 30 s, at most
    # two at once, so 40 s of running out of 60 s of capacity.
    summary = timeline(
        attempt(0, Outcome.SUCCEEDED, 0, 0, 10),
        attempt(1, Outcome.SUCCEEDED, 0, 0, 10),
        attempt(2, Outcome.FAILED, 5, 10, 30),
    ).summary()
    assert summary.wall_seconds == 30
    assert summary.peak_running == 2
    assert summary.busy_fraction == pytest.approx(40 / 60)
    assert summary.run_p50 == 10
    assert summary.run_p95 == pytest.approx(19.0)
    assert summary.describe() == (
        "wall 30.0s, busy 67% (peak 2 running), run time p50 10.0s p95 19.0s, 3 attempts"
    )


def test_live_attempts_run_until_the_moment_the_timeline_was_read() -> None:
    drawn = timeline(
        attempt(0, Outcome.RUNNING, 0, 5, None),
        attempt(1, Outcome.PENDING, 10, None, None),
        taken_at=40,
    )
    summary = drawn.summary()
    assert summary.wall_seconds == 40 and summary.run_p50 is None
    figure = drawn.figure()
    running = next(trace for trace in figure.data if trace.name == "running")
    assert list(running.x) == [35_000]
    waiting = next(trace for trace in figure.data if trace.name == PENDING_TRACE)
    assert list(waiting.y) == ["input 0", "input 1"]
    assert list(waiting.x) == [5_000, 30_000], "still pending: waits until now"


def test_an_empty_batch_draws_and_summarises() -> None:
    summary = timeline().summary()
    assert summary.wall_seconds == 0 and summary.busy_fraction == 0
    assert "n/a" in summary.describe()
    assert list(timeline().figure().data) == []


def test_without_plotly_the_error_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "plotly.graph_objects", None)
    with pytest.raises(KineticError, match=r"pip install 'kinetic\[plot\]'"):
        timeline().figure()


def test_without_kaleido_images_name_the_extra_and_html_still_works(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setitem(sys.modules, "choreographer.errors", None)
    with pytest.raises(KineticError, match=r"needs kaleido.*kinetic\[plot\]"):
        timeline().write(tmp_path / "t.png")
    assert not (tmp_path / "t.png").exists()
    assert timeline().write(tmp_path / "t.html").stat().st_size > 0


def test_without_a_browser_images_say_what_to_install(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from choreographer.errors import ChromeNotFoundError

    def no_browser(*args: object, **kwargs: object) -> None:
        raise ChromeNotFoundError("no chrome")

    import plotly.graph_objects as go

    monkeypatch.setattr(go.Figure, "write_image", no_browser)
    with pytest.raises(KineticError, match="apt-get install chromium") as info:
        timeline().write(tmp_path / "t.svg")
    assert "BROWSER_PATH" in str(info.value) and ".html" in str(info.value)


def test_hover_text_shows_store_text_as_text_not_html() -> None:
    """Reasons, messages, ids and the batch's name come from the store: plotly's hover HTML
    (links included) must show them, not interpret them."""
    from kinetic.batch.timeline import SubmissionFailure

    link = '<a href="http://evil">click</a>'
    failed = Attempt(
        index=0,
        attempt=0,
        job_id="job-<b>0</b>",
        outcome=Outcome.FAILED,
        reason=link,
        submitted_at=at(0),
        started_at=at(1),
        finished_at=at(2),
    )
    refused = SubmissionFailure(index=1, failed_at=at(3), exc_type="<i>E</i>", message=link)
    drawn = BatchTimeline("grp-1", "<script>x</script>", 2, [failed], [refused], taken_at=at(9))
    figure = drawn.figure()
    hovers = [text for trace in figure.data for text in trace.hovertext]
    shown = "\n".join([*hovers, figure.layout.title.text])
    for raw in (link, "<b>0</b>", "<i>E</i>", "<script>"):
        assert raw not in shown
    assert "&lt;a href=&quot;http://evil&quot;&gt;click&lt;/a&gt;" in shown
    assert "job-&lt;b&gt;0&lt;/b&gt;" in shown and "&lt;script&gt;x&lt;/script&gt;" in shown


def test_failed_attempts_are_coloured_by_cause_and_retried_ones_hatched() -> None:
    pytest.importorskip("plotly")
    from kinetic.batch.timeline_plot import CAUSE_COLOURS

    preempted, oom = FailureCause.PREEMPTED, FailureCause.OOM
    drawn = timeline(
        replace(attempt(0, Outcome.RETRIED, 0, 1, 5), cause=preempted),
        replace(attempt(0, Outcome.RETRIED, 6, 7, 9), attempt=1, cause=preempted),
        replace(attempt(1, Outcome.FAILED, 0, 1, 4), cause=oom),
        attempt(2, Outcome.SUCCEEDED, 0, 1, 3),
    )
    figure = drawn.figure()
    traces = {trace.name: trace for trace in figure.data}
    retried = traces["failed, retried: preempted"]
    assert list(retried.y) == ["input 0", "input 0"]
    assert retried.marker.color == CAUSE_COLOURS[preempted]
    assert retried.marker.pattern.shape == "/"
    failed = traces["failed: oom"]
    assert failed.marker.color == CAUSE_COLOURS[oom] and not failed.marker.pattern.shape
    assert "cause: oom" in failed.hovertext[0]
    assert len(set(CAUSE_COLOURS.values())) == len(FailureCause), "one colour per cause"
    assert drawn.summary().causes == {preempted: 2, oom: 1}
    assert "ended without a value: 2 preempted, 1 oom" in drawn.summary().describe()
