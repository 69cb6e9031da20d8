"""A function for the debug scenarios, shipped in the code bundle and stopped in by a debugger."""


def scaled_sum(values: list[int], factor: int) -> int:
    total = sum(values)
    return total * factor  # BREAK: the debug scenario stops here and reads `total`


def break_line() -> int:
    """The line marked BREAK above, for setting a breakpoint on it."""
    with open(__file__) as source:
        for number, line in enumerate(source, start=1):
            if "# BREAK" in line:
                return number
    raise AssertionError("no BREAK line")
