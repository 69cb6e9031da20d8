"""How each item of ``run_async_map(inputs)`` becomes the arguments of one call."""

import keyword
from typing import Any

__all__ = ["INPUT_MODES", "to_call_arguments"]

INPUT_MODES = ("auto", "single", "args", "kwargs")


def _is_kwargs(item: object) -> bool:
    return isinstance(item, dict) and all(
        isinstance(key, str) and key.isidentifier() and not keyword.iskeyword(key) for key in item
    )


def _shown(item: object) -> str:
    text = repr(item)
    return text if len(text) <= 80 else text[:77] + "..."


def _one(index: int, item: Any, mode: str) -> tuple[tuple[Any, ...], dict[str, Any]]:
    if mode == "single":
        return (item,), {}
    if mode == "args":
        if not isinstance(item, list | tuple):
            raise ValueError(
                f"input_mode='args' needs each input to be a list or tuple; input {index} is "
                f"a {type(item).__name__}: {_shown(item)}. Use input_mode='single' to pass it "
                "whole."
            )
        return tuple(item), {}
    if mode == "kwargs":
        if not isinstance(item, dict):
            raise ValueError(
                f"input_mode='kwargs' needs each input to be a dict; input {index} is a "
                f"{type(item).__name__}: {_shown(item)}."
            )
        if not _is_kwargs(item):
            bad = [k for k in item if not (isinstance(k, str) and k.isidentifier())
                   or keyword.iskeyword(str(k))]  # fmt: skip
            raise ValueError(
                f"input_mode='kwargs' needs identifier keys; input {index} has {bad!r}. "
                "Use input_mode='single' to pass the dict whole."
            )
        return (), dict(item)
    # auto
    if _is_kwargs(item):
        return (), dict(item)
    if isinstance(item, list | tuple):
        return tuple(item), {}
    return (item,), {}


def to_call_arguments(inputs: list[Any], mode: str) -> list[tuple[tuple[Any, ...], dict[str, Any]]]:
    """``(args, kwargs)`` for each input; a ValueError, before anything is submitted, if an
    input does not fit an explicit mode."""
    if mode not in INPUT_MODES:
        raise ValueError(f"input_mode must be one of {', '.join(INPUT_MODES)}; got {mode!r}.")
    return [_one(index, item, mode) for index, item in enumerate(inputs)]
