"""Pickle a call, and when that fails, name the object that could not be pickled.

Every ``kinetic.Data`` met while pickling, wherever it sits (an argument, inside containers,
dataclasses or a closure), is written as the persistent id ``("kinetic.data", i)`` instead of
itself, and collected: the job unpickles each id as the path the data was staged at.
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

__all__ = ["DataCollector", "SerializedCall", "find_data", "serialize_call"]


@dataclass(frozen=True)
class SerializedCall:
    """The pickled ``(fn, args, kwargs)`` and the ``Data`` its persistent ids ``i`` stand for."""

    payload: bytes
    data: list[Data] = field(default_factory=list)


class DataCollector(cloudpickle.Pickler):  # type: ignore[misc]  # cloudpickle is untyped
    """A cloudpickle pickler that writes each ``Data`` as a persistent id (one per object)."""

    def __init__(self, file: io.BytesIO) -> None:
        super().__init__(file, protocol=pickle.DEFAULT_PROTOCOL)
        self.found: list[Data] = []
        self._index: dict[int, int] = {}

    def persistent_id(self, obj: Any) -> tuple[str, int] | None:
        if not isinstance(obj, Data):
            return None
        index = self._index.get(id(obj))
        if index is None:
            index = self._index[id(obj)] = len(self.found)
            self.found.append(obj)
        return (PERSISTENT_ID_TAG, index)


def _dumps(obj: Any) -> SerializedCall:
    buffer = io.BytesIO()
    collector = DataCollector(buffer)
    collector.dump(obj)
    return SerializedCall(buffer.getvalue(), collector.found)


def find_data(obj: Any) -> list[Data]:
    """Every ``Data`` inside ``obj``, as pickling would find it (a batch's inputs); none if
    ``obj`` cannot be pickled (its submission reports that)."""
    try:
        return _dumps(obj).data
    except Exception:
        return []


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
    try:
        return _dumps((fn, args, kwargs))
    except Exception as exc:
        cause = exc
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
