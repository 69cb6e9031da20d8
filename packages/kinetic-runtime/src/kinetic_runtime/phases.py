"""The named steps of a job, so a failure says where it happened."""

import enum

__all__ = ["Phase", "PhaseError"]


class Phase(enum.StrEnum):
    FETCH = "fetch"
    VERIFY = "verify"
    UNPACK = "unpack"
    ENVIRONMENT = "environment"
    INSTALL = "install"
    DATA = "data"
    DESERIALIZE = "deserialize"
    DISTRIBUTED = "distributed"
    DEBUG = "debug"
    RUN = "run"
    SERIALIZE_RESULT = "serialize_result"
    INTERNAL = "internal"


class PhaseError(Exception):
    """Wraps the exception that stopped ``phase`` before or after the user's code."""

    def __init__(self, phase: Phase, cause: BaseException) -> None:
        super().__init__(f"{phase.value}: {cause}")
        self.phase = phase
        self.cause = cause
