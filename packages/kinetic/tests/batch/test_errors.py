"""``BatchError`` belongs to Kinetic's one exception hierarchy."""

import pytest

import kinetic
from kinetic.batch.errors import BatchError, SkippedInputError
from kinetic_protocol import KineticError


def test_a_batch_error_is_a_kinetic_error() -> None:
    assert issubclass(BatchError, KineticError)
    with pytest.raises(kinetic.KineticError, match="grp-1: 0 of 2 jobs failed"):
        raise BatchError("grp-1", [], [None, 1])


def test_batch_errors_are_exported_by_kinetic() -> None:
    assert kinetic.BatchError is BatchError
    assert kinetic.SkippedInputError is SkippedInputError
