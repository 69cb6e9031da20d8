"""Pickle a call, and when that fails, name the object that could not be pickled."""

import inspect
from collections.abc import Callable
from typing import Any

import cloudpickle

from kinetic_protocol import SerializationError

__all__ = ["serialize_call"]


def _picklable(obj: object) -> bool:
    try:
        cloudpickle.dumps(obj)
    except Exception:
        return False
    return True


def _describe(obj: object) -> str:
    shown = repr(obj)
    return shown if len(shown) <= 120 else shown[:117] + "..."


def _culprit_in_function(fn: Callable[..., Any]) -> str | None:
    """The global or closure variable that makes ``fn`` unpicklable, if one does."""
    closure = inspect.getclosurevars(fn)
    for kind, names in (("closure variable", closure.nonlocals), ("global", closure.globals)):
        for name, value in names.items():
            if not _picklable(value):
                return f"its {kind} {name!r} = {_describe(value)} ({type(value).__name__})"
    return None


def serialize_call(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> bytes:
    """Return the cloudpickled ``(fn, args, kwargs)`` or a SerializationError naming the culprit."""
    try:
        payload: bytes = cloudpickle.dumps((fn, args, kwargs))
    except Exception as exc:
        cause = exc
    else:
        return payload
    name = getattr(fn, "__qualname__", repr(fn))
    if not _picklable(fn):
        culprit = _culprit_in_function(fn) if inspect.isfunction(fn) else None
        where = f": {culprit}" if culprit else ""
        raise SerializationError(
            f"Function {name} cannot be pickled{where} ({cause}). Functions must only "
            "reference picklable objects; create clients, locks and open files inside the function."
        ) from cause
    for position, value in enumerate(args):
        if not _picklable(value):
            raise SerializationError(
                f"Argument {position} of {name}() cannot be pickled: {_describe(value)} "
                f"({type(value).__name__}): {cause}. Pass plain data, or a path to load."
            ) from cause
    for key, value in kwargs.items():
        if not _picklable(value):
            raise SerializationError(
                f"Keyword argument {key!r} of {name}() cannot be pickled: {_describe(value)} "
                f"({type(value).__name__}): {cause}. Pass plain data, or a path to load."
            ) from cause
    raise SerializationError(f"The call to {name}() cannot be pickled: {cause}") from cause
