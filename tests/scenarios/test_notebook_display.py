"""Handles in a notebook: ``_repr_html_`` summaries and ``BatchHandle.watch()`` on the local
backend (a terminal-less run prints lines; a Jupyter kernel gets one display updated in place).
"""

import re
import sys
import threading
import types
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import batch_userfuncs as uf
import pytest
from batch_support import four_local_slots  # noqa: F401 (an autouse fixture)
from scenario_support import ScenarioBackend, wait_until

from kinetic.batch.tally import Tally


class _Page(HTMLParser):
    """Collects the text and the progress bar's attributes of a summary (and proves it
    parses)."""

    def __init__(self, html: str) -> None:
        super().__init__()
        self.text: list[str] = []
        self.progress: dict[str, str | None] = {}
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if dict(attrs).get("role") == "progressbar":
            self.progress = dict(attrs)

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def test_job_and_batch_handles_render_a_compact_html_summary(
    local_backend: ScenarioBackend,
) -> None:
    square = local_backend.decorate()(uf.square)
    job = square.run_async(3)
    job.wait(timeout=60)
    page = _Page(job._repr_html_())
    text = " ".join(page.text)
    assert job.job_id in text and "SUCCEEDED" in text
    assert f"kinetic jobs logs {job.job_id} --follow" in text

    step = local_backend.decorate()(uf.step)
    batch = step.run_async_map(
        [{"value": 1}, {"value": 2, "fail": "no"}, {"value": 3}], name="<b>mine</b>"
    )
    batch.wait(timeout=60)
    html = batch._repr_html_()
    assert "<b>mine</b>" not in html, "names are escaped"
    page = _Page(html)
    text = " ".join(page.text)
    assert batch.group_id in text and "<b>mine</b>" in text
    assert "3/3 finished (2 done, 0 running, 0 pending, 1 failed)" in text
    assert page.progress["aria-valuenow"] == "3" and page.progress["aria-valuemax"] == "3"
    assert f"kinetic batch logs {batch.group_id} --follow" in text
    assert re.search(r"input 1: +user +\S*BatchUserError: no", text), text

    failed = batch.jobs[1]
    assert failed is not None
    page = _Page(failed._repr_html_())
    text = " ".join(page.text)
    assert "FAILED" in text and re.search(r"cause +user +\S*BatchUserError: no", text)


def test_watch_without_a_terminal_prints_a_line_per_change_and_returns_the_counts(
    local_backend: ScenarioBackend, capsys: pytest.CaptureFixture[str]
) -> None:
    square = local_backend.decorate()(uf.square)
    batch = square.run_async_map([1, 2, 3])
    counts = batch.watch(interval=0.1, timeout=60)
    assert counts == Tally(total=3, succeeded=3)
    out = capsys.readouterr().out
    assert f"{batch.group_id}: 3/3 finished" in out
    assert f"Batch {batch.group_id} finished in" in out and "3 succeeded, 0 failed" in out


def test_watch_in_a_notebook_updates_one_display_in_place(
    local_backend: ScenarioBackend, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A stand-in for Jupyter's IPython (not installed here): ``display(..., display_id=True)``
    then ``update`` on the handle it returned, as IPython's API is."""
    shown: list[str] = []

    class DisplayHandle:
        def update(self, page: Any) -> None:
            shown.append(page.data)

    class HTML:
        def __init__(self, data: str) -> None:
            self.data = data

    def display(page: Any, display_id: bool = False) -> DisplayHandle:
        assert display_id is True
        shown.append(page.data)
        return DisplayHandle()

    ZMQInteractiveShell = type("ZMQInteractiveShell", (), {})
    ipython = types.ModuleType("IPython")
    ipython.get_ipython = ZMQInteractiveShell  # type: ignore[attr-defined]
    ipython_display = types.ModuleType("IPython.display")
    ipython_display.HTML = HTML  # type: ignore[attr-defined]
    ipython_display.display = display  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "IPython", ipython)
    monkeypatch.setitem(sys.modules, "IPython.display", ipython_display)

    step = local_backend.decorate()(uf.step)
    gate = tmp_path / "gate"
    batch = step.run_async_map([{"value": 1, "wait_for": str(gate)}, {"value": 2}])
    wait_until(lambda: dict(batch.statuses()).get(1) is not None, "input 1 to be submitted")
    result: list[Tally] = []
    watcher = threading.Thread(target=lambda: result.append(batch.watch(interval=0.05)))
    watcher.start()
    wait_until(lambda: shown, "the first display")
    gate.touch()
    watcher.join(timeout=60)
    assert result == [Tally(total=2, succeeded=2)]
    assert len(shown) >= 2, "shown once, then updated"
    assert "2/2 finished" in shown[-1] and batch.group_id in shown[-1]
    assert "2/2 finished" not in shown[0]
