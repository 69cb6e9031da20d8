"""The docs home page and a batch timeline, rendered by a real headless Chromium (Debian's
``chromium`` package, driven through Playwright): the pages draw, the timeline's bars and hover
text are there, and the browser logs no errors.

Screenshots go to the test's temporary directory, and also to ``$SCREENSHOTS_DIR`` when set.
"""

import functools
import http.server
import os
import shutil
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from docs_support import DOCS, GUIDES

from kinetic.batch.timeline import Attempt, BatchTimeline, Outcome, SubmissionFailure

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(
    CHROMIUM is None,
    reason="needs Debian's chromium package (apt-get install chromium); .ci/run installs it",
)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        # --no-sandbox: CI runs as root, where Chromium's sandbox refuses to start.
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield launched
        launched.close()


class _Page:
    """A browser tab that records every console error and uncaught exception."""

    def __init__(self, browser: Any) -> None:
        self.page = browser.new_page(viewport={"width": 1440, "height": 900})
        self.page.set_default_timeout(15_000)
        self.errors: list[str] = []
        self.page.on(
            "console",
            lambda message: self.errors.append(message.text) if message.type == "error" else None,
        )
        self.page.on("pageerror", lambda error: self.errors.append(str(error)))
        self.page.on("requestfailed", self._request_failed)

    def _request_failed(self, request: Any) -> None:
        # ERR_ABORTED is the browser dropping a request of a page it navigates away from (the
        # search worker can start after "networkidle" on a loaded machine), not a site fault:
        # a missing file is a 404, which the console reports.
        if "ERR_ABORTED" not in str(request.failure):
            self.errors.append(f"{request.url}: {request.failure}")

    def screenshot(self, tmp_path: Path, name: str) -> None:
        self.page.screenshot(path=str(tmp_path / name), full_page=True)
        keep = os.environ.get("SCREENSHOTS_DIR")
        if keep:
            Path(keep).mkdir(parents=True, exist_ok=True)
            shutil.copy(tmp_path / name, Path(keep) / name)


@pytest.fixture
def served_site(built_site: Path) -> Iterator[str]:
    """The built site over HTTP (search and scripts expect a server, not file://)."""

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

    handler = functools.partial(Quiet, directory=str(built_site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_the_docs_home_page_renders_without_errors(
    browser: Any, served_site: str, tmp_path: Path
) -> None:
    tab = _Page(browser)
    tab.page.goto(f"{served_site}/", wait_until="networkidle")
    assert tab.page.title().startswith("Kinetic")
    assert tab.page.inner_text("article h1").rstrip("¶") == "Kinetic"
    nav = tab.page.inner_text("nav.md-nav--primary")
    for entry in ("Getting started", "Batches", "Command line", "Configuration", "Security"):
        assert entry in nav, entry
    tab.page.click("article a[href='getting-started/']")
    tab.page.wait_for_url("**/getting-started/")
    assert "A first job" in tab.page.inner_text("article")
    tab.page.goto(f"{served_site}/", wait_until="networkidle")
    tab.screenshot(tmp_path, "docs-home.png")
    assert tab.errors == []


def _url_path(page: Path) -> str:
    """Where mkdocs serves ``page`` (``guides/batches.md`` -> ``guides/batches/``)."""
    relative = page.relative_to(DOCS).with_suffix("").as_posix()
    return "" if relative == "index" else relative.removesuffix("/index") + "/"


def test_no_code_block_of_the_home_page_or_the_guides_scrolls_sideways(
    browser: Any, served_site: str
) -> None:
    """A line wider than its block hides its end (often a comment) off the block's edge."""
    tab = _Page(browser)
    overflowing: dict[str, list[str]] = {}
    for page in GUIDES:
        tab.page.goto(f"{served_site}/{_url_path(page)}", wait_until="networkidle")
        wide = tab.page.evaluate(
            "() => [...document.querySelectorAll('article pre > code')]"
            ".filter(code => code.scrollWidth > code.clientWidth)"
            ".map(code => code.textContent.split('\\n')"
            ".reduce((a, b) => (b.length > a.length ? b : a), ''))"
        )
        if wide:
            overflowing[_url_path(page) or "/"] = wide
    assert overflowing == {}, "the longest line of each block that scrolls"
    assert tab.errors == []


def _timeline() -> BatchTimeline:
    """A batch of five inputs: a success, a retry that succeeded, a failure after its retry,
    a submission failure and a cancellation."""
    start = datetime(2026, 11, 25, 12, 0, tzinfo=UTC)

    def at(seconds: float) -> datetime:
        return start + timedelta(seconds=seconds)

    reasons = {
        Outcome.CANCELLED: "the batch was cancelled",
        Outcome.FAILED: "ValueError: lr diverges",
        Outcome.RETRIED: "ValueError: lr diverges",
    }

    def attempt(index: int, n: int, outcome: Outcome, times: tuple[float, float, float]) -> Attempt:
        return Attempt(
            index=index,
            attempt=n,
            job_id=f"train-ab12cd34-{index}" + (f"-r{n}" if n else ""),
            outcome=outcome,
            reason=reasons.get(outcome, ""),
            submitted_at=at(times[0]),
            started_at=at(times[1]),
            finished_at=at(times[2]),
        )

    return BatchTimeline(
        group_id="grp-ab12cd34",
        name="lr-sweep",
        total=5,
        attempts=[
            attempt(0, 0, Outcome.SUCCEEDED, (0, 2, 30)),
            attempt(1, 0, Outcome.RETRIED, (0, 3, 12)),
            attempt(1, 1, Outcome.SUCCEEDED, (13, 15, 41)),
            attempt(2, 0, Outcome.RETRIED, (1, 4, 9)),
            attempt(2, 1, Outcome.FAILED, (10, 11, 17)),
            attempt(4, 0, Outcome.CANCELLED, (1, 6, 45)),
        ],
        submission_failures=[
            SubmissionFailure(
                index=3,
                failed_at=at(1),
                exc_type="SerializationError",
                message="cannot pickle '_thread.lock' object",
            )
        ],
        taken_at=at(50),
    )


def test_a_timeline_renders_its_bars_and_hover_text_in_chromium(
    browser: Any, tmp_path: Path
) -> None:
    timeline = _timeline()
    out = timeline.write(tmp_path / "timeline.html")
    tab = _Page(browser)
    tab.page.goto(out.as_uri())
    tab.page.wait_for_selector(".main-svg .barlayer .point path")
    bars = tab.page.locator(".barlayer .trace.bars .point path")
    # Six waiting bars and six running ones, each with a width on screen.
    assert bars.count() == 12
    widths = [bars.nth(i).bounding_box()["width"] for i in range(bars.count())]
    assert all(width > 0 for width in widths), widths
    assert tab.page.locator(".scatterlayer .point").count() == 1, "the submission failure's x"
    legend = tab.page.text_content(".legend") or ""
    for name in ("succeeded", "failed, retried", "failed", "cancelled", "submission failed"):
        assert name in legend, name
    assert "busy" in (tab.page.text_content(".gtitle") or "")
    tab.screenshot(tmp_path, "timeline.png")

    # Hover over the cancelled attempt's bar: its job id, reason and durations show.
    box = _bar_box(tab.page, trace_name="cancelled")
    tab.page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    tab.page.wait_for_selector(".hoverlayer .hovertext")
    hover = tab.page.text_content(".hoverlayer") or ""
    assert "train-ab12cd34-4" in hover
    assert "the batch was cancelled" in hover
    assert "waited 5.0s, ran 39.0s" in hover
    tab.screenshot(tmp_path, "timeline-hover.png")
    assert tab.errors == []


def _bar_box(page: Any, *, trace_name: str) -> dict[str, float]:
    """The screen box of the first bar of the trace named ``trace_name`` (plotly draws one
    ``g.trace.bars`` per trace, in the figure's trace order)."""
    index = page.evaluate(
        "(name) => document.querySelector('.js-plotly-plot').data"
        ".filter(t => t.type === 'bar').findIndex(t => t.name === name)",
        trace_name,
    )
    assert index >= 0, trace_name
    box: dict[str, float] = (
        page.locator(".barlayer .trace.bars").nth(index).locator(".point path").first.bounding_box()
    )
    return box
