"""The upload progress bar: drawn on a terminal for a large transfer, never otherwise."""

import io
import sys

import pytest

from kinetic.data.progress import SHOW_ABOVE_BYTES, transfer_progress


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_large_transfer_on_a_terminal_shows_a_bar(monkeypatch: pytest.MonkeyPatch) -> None:
    terminal = _Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    with transfer_progress("Uploading ./dataset", SHOW_ABOVE_BYTES * 2) as advance:
        advance(SHOW_ABOVE_BYTES)
        advance(SHOW_ABOVE_BYTES)
    assert "Uploading ./dataset" in terminal.getvalue()


@pytest.mark.parametrize("tty", [False, True])
def test_nothing_is_drawn_off_a_terminal_or_for_a_small_transfer(
    monkeypatch: pytest.MonkeyPatch, tty: bool
) -> None:
    stream = _Terminal() if tty else io.StringIO()
    monkeypatch.setattr(sys, "stderr", stream)
    size = SHOW_ABOVE_BYTES - 1 if tty else SHOW_ABOVE_BYTES * 4
    with transfer_progress("Uploading", size) as advance:
        advance(size)
    assert stream.getvalue() == ""
