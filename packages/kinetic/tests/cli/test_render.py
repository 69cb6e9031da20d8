"""Rendering helpers: JSON-ability, plain tables, progress counts and timing."""

import json
from typing import Any

import pytest

from kinetic.batch.progress import Tally, WatchDisplay, format_seconds
from kinetic.cli import render


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ({"loss": 0.1, "steps": [1, 2]}, True),
        ("text", True),
        (None, True),
        ((1, 2), False),  # would come back as a list
        ({1: "a"}, False),  # int keys would come back as strings
        (float("nan"), False),
        ({1, 2}, False),
        ([{"nested": (1,)}], False),
    ],
)
def test_jsonable_means_survives_json_unchanged(value: Any, expected: bool) -> None:
    assert render.jsonable(value) is expected


def test_format_value_strings_raw_json_values_as_json_others_as_repr() -> None:
    assert render.format_value("hello\nworld") == "hello\nworld"
    assert json.loads(render.format_value({"a": [1, 2]})) == {"a": [1, 2]}
    assert render.format_value({"a": [1, 2]}, compact=True) == '{"a": [1, 2]}'
    assert render.format_value((1, 2)) == "(1, 2)"


def test_plain_table_aligns_columns_and_puts_empty_notes_on_stderr(
    capsys: pytest.CaptureFixture[str],
) -> None:
    render.table(["A", "LONGER"], [["xxxx", "1"], ["y", "22"]])
    assert capsys.readouterr().out.splitlines() == ["A     LONGER", "xxxx  1", "y     22"]
    render.table(["A"], [], empty="Nothing here.")
    captured = capsys.readouterr()
    assert (captured.out, captured.err) == ("", "Nothing here.\n")


def test_terminal_table_escapes_markup_in_cells(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TTY_COMPATIBLE", "1")
    render.table(["VALUE", "STATUS"], [["[bold]x[/bold]", "FAILED (exit 1)"]], status_column=1)
    out = capsys.readouterr().out
    assert "[bold]x[/bold]" in out  # shown literally, not interpreted
    assert "\x1b[31mFAILED (exit 1)" in out  # the status column is coloured


def test_key_values_align_keys(capsys: pytest.CaptureFixture[str]) -> None:
    render.key_values({"Job": "j-1", "Status": "RUNNING"})
    assert capsys.readouterr().out == "Job:    j-1\nStatus: RUNNING\n"


def test_tally_summary_and_finished() -> None:
    counts = Tally(total=10, succeeded=3, failed=1, running=2, pending=1, unsubmitted=2, gone=1)
    assert counts.finished == 5
    assert counts.summary() == "3 done, 2 running, 3 pending, 1 failed, 1 gone"
    assert counts.as_dict()["finished"] == 5


def test_format_seconds() -> None:
    assert [format_seconds(s) for s in (None, 0, 61.4, 3723)] == ["?", "0:00", "1:01", "1:02:03"]


def test_eta_is_unknown_until_something_finishes_during_the_watch() -> None:
    display = WatchDisplay("grp-1", 4, live=False)
    display.update(Tally(total=4, succeeded=1, pending=3))
    assert display.eta(Tally(total=4, succeeded=1, pending=3)) is None
    display.started -= 10  # ten seconds into the watch, one more input finished
    eta = display.eta(Tally(total=4, succeeded=2, pending=2))
    assert eta is not None
    assert 19 < eta < 21  # two left at one per ~10 s
    assert display.eta(Tally(total=4, succeeded=4)) == 0.0


def test_plain_watch_prints_a_line_only_on_a_change(capsys: pytest.CaptureFixture[str]) -> None:
    display = WatchDisplay("grp-1", 2, live=False)
    with display:
        for counts in (
            Tally(total=2, pending=2),
            Tally(total=2, pending=2),
            Tally(total=2, running=1, pending=1),
        ):
            display.update(counts)
    lines = capsys.readouterr().out.splitlines()
    assert [line.split(", elapsed")[0] for line in lines] == [
        "grp-1: 0/2 finished (0 done, 0 running, 2 pending, 0 failed)",
        "grp-1: 0/2 finished (0 done, 1 running, 1 pending, 0 failed)",
    ]


def test_printable_shows_control_characters_as_escapes_but_keeps_lines_and_tabs() -> None:
    text = "a\tb\nc\x1b[2J\x07\x00\r\x7f\x9b\u00e9\u2603"
    assert render.printable(text) == "a\tb\nc" + r"\x1b[2J\x07\x00\x0d\x7f\x9b" + "\u00e9\u2603"


def test_tables_and_key_values_escape_control_characters(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    render.table(["A"], [["x\x1b]0;title\x07"]])
    render.key_values({"Reason": "\x1b[2Jgone"})
    assert capsys.readouterr().out == "A\nx\\x1b]0;title\\x07\nReason: \\x1b[2Jgone\n"
    monkeypatch.setenv("TTY_COMPATIBLE", "1")
    render.table(["A"], [["x\x1b]0;title\x07"]])
    assert "\x07" not in capsys.readouterr().out
