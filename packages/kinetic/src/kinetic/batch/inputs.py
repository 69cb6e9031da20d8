"""How each item of ``run_async_map(inputs)`` becomes the arguments of one call.

Errors follow the rule of ``docs/architecture.md`` ("Errors"): TypeError for a wrong type,
ConfigError (a ValueError) for a wrong value.
"""

import keyword
from typing import Any

from kinetic_protocol import ConfigError

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
            raise TypeError(
                f"input_mode='args' needs each input to be a list or tuple; input {index} is "
                f"a {type(item).__name__}: {_shown(item)}. Use input_mode='single' to pass it "
                "whole."
            )
        return tuple(item), {}
    if mode == "kwargs":
        if not isinstance(item, dict):
            raise TypeError(
                f"input_mode='kwargs' needs each input to be a dict; input {index} is a "
                f"{type(item).__name__}: {_shown(item)}."
            )
        if not all(isinstance(key, str) for key in item):
            # As Python's own f(**item) says: keywords must be strings.
            bad = [key for key in item if not isinstance(key, str)]
            raise TypeError(
                f"input_mode='kwargs' needs str keys; input {index} has {bad!r}. "
                "Use input_mode='single' to pass the dict whole."
            )
        if not _is_kwargs(item):
            bad = [key for key in item if not key.isidentifier() or keyword.iskeyword(key)]
            raise ConfigError(
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
    """``(args, kwargs)`` for each input, or an error before anything is submitted.

    An input of the wrong type for an explicit mode is a TypeError; a mode that is not one of
    ``INPUT_MODES``, or keyword names that are not identifiers, a ConfigError (a ValueError).
    """
    if not isinstance(mode, str):
        raise TypeError(f"input_mode must be a str, one of {', '.join(INPUT_MODES)}; got {mode!r}.")
    if mode not in INPUT_MODES:
        raise ConfigError(f"input_mode must be one of {', '.join(INPUT_MODES)}; got {mode!r}.")
    return [_one(index, item, mode) for index, item in enumerate(inputs)]
