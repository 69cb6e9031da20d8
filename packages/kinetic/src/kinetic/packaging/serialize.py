"""Pickle a call, and when that fails, name the object that could not be pickled.

Every ``kinetic.Data`` met while pickling, wherever it sits (an argument, inside containers,
dataclasses or a closure), is written as the persistent id ``("kinetic.data", i)`` instead of
itself, and collected: the job unpickles each id as the path the data was staged at. A batch
pickles its function and each input apart, with one numbering of its ``Data`` for them all.
"""

import inspect
import io
import pickle
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import cloudpickle

from kinetic.data import Data
from kinetic_protocol import SerializationError
from kinetic_protocol.data import PERSISTENT_ID_TAG

__all__ = [
    "DataNumbering",
    "Pickled",
    "SerializedCall",
    "find_data",
    "serialize_arguments",
    "serialize_call",
    "serialize_function",
]


class DataNumbering:
    """The ``Data`` of one call or one batch, numbered in the order pickling meets them (one
    number per object, however often it is met)."""

    def __init__(self) -> None:
        self.found: list[Data] = []
        self._index: dict[int, int] = {}

    def number(self, data: Data) -> int:
        index = self._index.get(id(data))
        if index is None:
            index = self._index[id(data)] = len(self.found)
            self.found.append(data)
        return index


@dataclass(frozen=True)
class Pickled:
    """Bytes pickled with ``Data`` as persistent ids, and the numbers they refer to."""

    payload: bytes
    refers_to: list[int] = field(default_factory=list)


@dataclass(frozen=True)
class SerializedCall:
    """The pickled ``(fn, args, kwargs)`` and the ``Data`` its persistent ids ``i`` stand for."""

    payload: bytes
    data: list[Data] = field(default_factory=list)


class _DataPickler(cloudpickle.Pickler):  # type: ignore[misc]  # cloudpickle is untyped
    """A cloudpickle pickler that writes each ``Data`` as a persistent id."""

    def __init__(self, file: io.BytesIO, numbering: DataNumbering) -> None:
        super().__init__(file, protocol=pickle.DEFAULT_PROTOCOL)
        self.numbering = numbering
        self.refers_to: set[int] = set()

    def persistent_id(self, obj: Any) -> tuple[str, int] | None:
        if not isinstance(obj, Data):
            return None
        index = self.numbering.number(obj)
        self.refers_to.add(index)
        return (PERSISTENT_ID_TAG, index)


def _dumps(obj: Any, numbering: DataNumbering) -> Pickled:
    buffer = io.BytesIO()
    pickler = _DataPickler(buffer, numbering)
    pickler.dump(obj)
    return Pickled(buffer.getvalue(), sorted(pickler.refers_to))


def find_data(obj: Any) -> list[Data]:
    """Every ``Data`` inside ``obj``, as pickling would find it; none if ``obj`` cannot be
    pickled (its submission reports that)."""
    numbering = DataNumbering()
    try:
        _dumps(obj, numbering)
    except Exception:
        return []
    return numbering.found


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


def serialize_call(
    fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
) -> SerializedCall:
    """Pickle ``(fn, args, kwargs)``, collecting its ``Data``; a SerializationError names the
    object that cannot be pickled."""
    numbering = DataNumbering()
    try:
        pickled = _dumps((fn, args, kwargs), numbering)
    except Exception as exc:
        cause = exc
    else:
        return SerializedCall(pickled.payload, numbering.found)
    _explain_function(fn, cause)
    _explain_arguments(fn, args, kwargs, cause)
    name = getattr(fn, "__qualname__", repr(fn))
    raise SerializationError(f"The call to {name}() cannot be pickled: {cause}") from cause


def serialize_function(fn: Callable[..., Any], numbering: DataNumbering) -> Pickled:
    """The pickled function a batch's children share, or a SerializationError."""
    try:
        return _dumps(fn, numbering)
    except Exception as exc:
        _explain_function(fn, exc)
        raise SerializationError(f"{fn!r} cannot be pickled: {exc}") from exc


def serialize_arguments(
    fn: Callable[..., Any],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    numbering: DataNumbering,
    *,
    where: str = "",
) -> Pickled:
    """One call's pickled ``(args, kwargs)``; the error names the argument (and ``where``,
    e.g. which input of a batch)."""
    try:
        return _dumps((args, kwargs), numbering)
    except Exception as exc:
        _explain_arguments(fn, args, kwargs, exc, where=where)
        raise SerializationError(f"The arguments{where} cannot be pickled: {exc}") from exc


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
