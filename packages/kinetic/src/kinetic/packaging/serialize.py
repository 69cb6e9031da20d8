"""Pickle a call, and when that fails, name the object that could not be pickled."""

import inspect
from collections.abc import Callable
from typing import Any

import cloudpickle

from kinetic_protocol import SerializationError

__all__ = ["serialize_arguments", "serialize_call", "serialize_function"]


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
    _explain_function(fn, cause)
    _explain_arguments(fn, args, kwargs, cause)
    name = getattr(fn, "__qualname__", repr(fn))
    raise SerializationError(f"The call to {name}() cannot be pickled: {cause}") from cause


def serialize_function(fn: Callable[..., Any]) -> bytes:
    """The cloudpickled function a batch's children share, or a SerializationError."""
    try:
        payload: bytes = cloudpickle.dumps(fn)
    except Exception as exc:
        _explain_function(fn, exc)
        raise SerializationError(f"{fn!r} cannot be pickled: {exc}") from exc
    return payload


def serialize_arguments(
    fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any], *, where: str = ""
) -> bytes:
    """One call's cloudpickled ``(args, kwargs)``; the error names the argument (and ``where``,
    e.g. which input of a batch)."""
    try:
        payload: bytes = cloudpickle.dumps((args, kwargs))
    except Exception as exc:
        _explain_arguments(fn, args, kwargs, exc, where=where)
        raise SerializationError(f"The arguments{where} cannot be pickled: {exc}") from exc
    return payload


def _explain_function(fn: Callable[..., Any], cause: Exception) -> None:
    """Raise a SerializationError naming what makes ``fn`` unpicklable, if it is."""
    if _picklable(fn):
        return
    name = getattr(fn, "__qualname__", repr(fn))
    culprit = _culprit_in_function(fn) if inspect.isfunction(fn) else None
    where = f": {culprit}" if culprit else ""
    raise SerializationError(
        f"Function {name} cannot be pickled{where} ({cause}). Functions must only "
        "reference picklable objects; create clients, locks and open files inside the function."
    ) from cause


def _explain_arguments(
    fn: Callable[..., Any],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    cause: Exception,
    *,
    where: str = "",
) -> None:
    """Raise a SerializationError naming the first argument that cannot be pickled."""
    name = getattr(fn, "__qualname__", repr(fn))
    for position, value in enumerate(args):
        if not _picklable(value):
            raise SerializationError(
                f"Argument {position} of {name}(){where} cannot be pickled: {_describe(value)} "
                f"({type(value).__name__}): {cause}. Pass plain data, or a path to load."
            ) from cause
    for key, value in kwargs.items():
        if not _picklable(value):
            raise SerializationError(
                f"Keyword argument {key!r} of {name}(){where} cannot be pickled: "
                f"{_describe(value)} ({type(value).__name__}): {cause}. Pass plain data, or a "
                "path to load."
            ) from cause
