"""The input-mode table of the batch spec: how each input becomes ``(args, kwargs)``."""

from typing import Any

import pytest

from kinetic.batch.inputs import INPUT_MODES, to_call_arguments
from kinetic_protocol import ConfigError

Call = tuple[tuple[Any, ...], dict[str, Any]]


@pytest.mark.parametrize(
    ("item", "expected"),
    [
        pytest.param(
            {"lr": 0.01, "wd": 1e-4}, ((), {"lr": 0.01, "wd": 1e-4}), id="identifier-dict"
        ),
        pytest.param({"_x": 1, "x2": 2}, ((), {"_x": 1, "x2": 2}), id="underscore-and-digit-keys"),
        pytest.param({"not-an-id": 1}, (({"not-an-id": 1},), {}), id="non-identifier-key"),
        pytest.param({"class": 1}, (({"class": 1},), {}), id="keyword-key"),
        pytest.param({"None": 1}, (({"None": 1},), {}), id="keyword-None-key"),
        pytest.param({"lr": 1, "2x": 2}, (({"lr": 1, "2x": 2},), {}), id="one-bad-key-of-two"),
        pytest.param({1: "a"}, (({1: "a"},), {}), id="int-key"),
        pytest.param({"a b": 1}, (({"a b": 1},), {}), id="space-in-key"),
        pytest.param([0.01, 32], ((0.01, 32), {}), id="list"),
        pytest.param((0.01, 32), ((0.01, 32), {}), id="tuple"),
        pytest.param([], ((), {}), id="empty-list"),
        pytest.param(0.01, ((0.01,), {}), id="float"),
        pytest.param("abc", (("abc",), {}), id="str-is-not-unpacked"),
        pytest.param(b"ab", ((b"ab",), {}), id="bytes-is-not-unpacked"),
        pytest.param({1, 2}, (({1, 2},), {}), id="set-is-not-unpacked"),
        pytest.param(None, ((None,), {}), id="none"),
    ],
)
def test_auto_mode(item: Any, expected: Call) -> None:
    assert to_call_arguments([item], "auto") == [expected]


@pytest.mark.parametrize(
    "item", [[1, 2], (1, 2), {"lr": 1}, {"not-an-id": 1}, "abc", 3, None], ids=repr
)
def test_single_mode_always_passes_the_item_whole(item: Any) -> None:
    assert to_call_arguments([item], "single") == [((item,), {})]


@pytest.mark.parametrize("item", [[1, 2], (1, 2), []], ids=repr)
def test_args_mode_unpacks_lists_and_tuples(item: Any) -> None:
    assert to_call_arguments([item], "args") == [(tuple(item), {})]


@pytest.mark.parametrize("item", [{"lr": 1}, {"lr": 1, "batch_size": 32}], ids=repr)
def test_kwargs_mode_unpacks_dicts(item: dict[str, Any]) -> None:
    assert to_call_arguments([item], "kwargs") == [((), item)]


def test_unpacked_kwargs_are_a_copy_of_the_input() -> None:
    item = {"lr": 1}
    [(_, kwargs)] = to_call_arguments([item], "auto")
    kwargs["lr"] = 2
    assert item == {"lr": 1}


@pytest.mark.parametrize(
    ("mode", "bad", "error"),
    [
        ("args", {"lr": 1}, TypeError),
        ("args", 3, TypeError),
        ("args", "ab", TypeError),
        ("args", None, TypeError),
        ("kwargs", [1, 2], TypeError),
        ("kwargs", 3, TypeError),
        ("kwargs", {1: 2}, TypeError),  # as f(**{1: 2}): keywords must be strings
        ("kwargs", {"not-an-id": 1}, ConfigError),
        ("kwargs", {"class": 1}, ConfigError),
    ],
    ids=repr,
)
def test_explicit_mode_mismatch_names_the_index_and_the_mode(
    mode: str, bad: Any, error: type[Exception]
) -> None:
    """The errors rule: an input of the wrong type is a TypeError, bad keyword names a
    ConfigError (a ValueError)."""
    good = [1] if mode == "args" else {"a": 1}
    with pytest.raises(error, match=r"input 2\b") as info:
        to_call_arguments([good, good, bad, good], mode)
    assert f"input_mode={mode!r}" in str(info.value)


def test_kwargs_mismatch_names_the_offending_keys() -> None:
    with pytest.raises(ConfigError, match="not-an-id") as info:
        to_call_arguments([{"ok": 1, "not-an-id": 2, "class": 3}], "kwargs")
    assert "class" in str(info.value)
    assert "'ok'" not in str(info.value)


def test_a_long_bad_input_is_shortened_in_the_message() -> None:
    with pytest.raises(TypeError, match="input 0") as info:
        to_call_arguments([list(range(1000))], "kwargs")
    assert len(str(info.value)) < 300


def test_unknown_mode_lists_the_valid_ones() -> None:
    with pytest.raises(ConfigError, match="'positional'") as info:
        to_call_arguments([1], "positional")
    assert all(mode in str(info.value) for mode in INPUT_MODES)
    assert set(INPUT_MODES) == {"auto", "single", "args", "kwargs"}


def test_a_mode_that_is_not_a_str_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="input_mode must be a str"):
        to_call_arguments([1], 2)  # type: ignore[arg-type]


def test_every_input_keeps_its_position() -> None:
    inputs = [{"a": 1}, [2, 3], 4, {"x-y": 5}]
    assert to_call_arguments(inputs, "auto") == [
        ((), {"a": 1}),
        ((2, 3), {}),
        ((4,), {}),
        (({"x-y": 5},), {}),
    ]
    assert to_call_arguments([], "auto") == []
