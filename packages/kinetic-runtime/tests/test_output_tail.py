"""The tail of a run's output the keeper keeps in the store (``kinetic_runtime.keeper``): the
last bytes within its bound, starting at a line start."""

import pytest

from kinetic_runtime.keeper import OutputTail

LINES = [f"line {number}\n".encode() for number in range(10)]


@pytest.mark.parametrize(
    "writes",
    [
        [part for line in LINES for part in (line[:-1], b"\n")],  # a line end in its own write
        [b"".join(LINES)],  # every line in one write
    ],
    ids=["line by line", "at once"],
)
def test_the_kept_tail_starts_at_a_line_start_within_its_bound(writes: list[bytes]) -> None:
    tail = OutputTail(16)
    for data in writes:
        tail.add(data)
    assert tail.text() == "line 8\nline 9\n"
    assert tail.dropped == len(b"".join(LINES)) - len(tail.text())


def test_a_line_longer_than_the_bound_is_kept_from_the_bound() -> None:
    tail = OutputTail(4)
    tail.add(b"abcdefgh")
    assert (tail.text(), tail.dropped) == ("efgh", 4)
    tail.add(b"ij\n")  # the only line end is the last byte: cutting there would keep nothing
    assert (tail.text(), tail.dropped) == ("hij\n", 7)
