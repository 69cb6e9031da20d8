"""Job statuses and the exception hierarchy users catch."""

import pytest

from kinetic_protocol import (
    TERMINAL_STATUSES,
    BackendError,
    ConfigError,
    CorruptRecordError,
    JobFailedError,
    JobNotFoundError,
    JobState,
    JobStatus,
    KineticError,
    ObjectNotFoundError,
    PreconditionFailedError,
    RemoteError,
    SchemaVersionError,
    SerializationError,
    StorageError,
)


def test_statuses_have_the_spec_values_and_terminal_states() -> None:
    assert [s.value for s in JobStatus] == [
        "PENDING",
        "RUNNING",
        "SUCCEEDED",
        "FAILED",
        "NOT_FOUND",
    ]
    assert {s for s in JobStatus if s.is_terminal} == TERMINAL_STATUSES
    assert not JobStatus.PENDING.is_terminal and not JobStatus.RUNNING.is_terminal


@pytest.mark.parametrize(
    ("state", "text"),
    [
        (JobState(status=JobStatus.RUNNING), "RUNNING"),
        (JobState(status=JobStatus.FAILED, exit_code=1), "FAILED (exit 1)"),
        (
            JobState(status=JobStatus.FAILED, detail="OOMKilled", exit_code=137),
            "FAILED (OOMKilled, exit 137)",
        ),
        (JobState(status=JobStatus.FAILED, detail="exit 2", exit_code=2), "FAILED (exit 2)"),
    ],
)
def test_a_state_describes_itself_in_one_line(state: JobState, text: str) -> None:
    assert state.describe() == text


@pytest.mark.parametrize(
    ("error", "bases"),
    [
        (ConfigError, (KineticError, ValueError)),
        (SerializationError, (KineticError, TypeError)),
        (ObjectNotFoundError, (StorageError, KeyError)),
        (PreconditionFailedError, (StorageError,)),
        (CorruptRecordError, (StorageError,)),
        (SchemaVersionError, (KineticError,)),
        (BackendError, (KineticError,)),
        (JobNotFoundError, (KineticError, LookupError)),
        (JobFailedError, (KineticError, RuntimeError)),
        (RemoteError, (KineticError,)),
    ],
)
def test_every_error_belongs_to_its_family(error: type[Exception], bases: tuple[type, ...]) -> None:
    assert issubclass(error, bases)


def test_object_not_found_prints_its_message_not_a_repr() -> None:
    assert str(ObjectNotFoundError("No object 'a/b' in store x")) == "No object 'a/b' in store x"


def test_a_remote_error_keeps_type_message_and_traceback() -> None:
    error = RemoteError("mymod.Gone", "went away", "Traceback ...")
    assert str(error) == "mymod.Gone: went away"
    assert (error.exc_type, error.message, error.remote_traceback) == (
        "mymod.Gone",
        "went away",
        "Traceback ...",
    )


def test_every_public_name_resolves_to_its_modules_own_object() -> None:
    """The package loads names on first use; each must be the defining module's object (an
    exception class imported two ways must stay one class for ``except``)."""
    import importlib

    import kinetic_protocol

    for name in kinetic_protocol.__all__:
        value = getattr(kinetic_protocol, name)
        module = importlib.import_module(f"kinetic_protocol.{kinetic_protocol._MODULE_OF[name]}")
        assert value is getattr(module, name), name
    assert set(kinetic_protocol._MODULE_OF) == set(kinetic_protocol.__all__)


def test_the_type_checkers_imports_name_exactly_the_lazy_exports() -> None:
    """The names are listed twice, once for type checkers (``if TYPE_CHECKING:``) and once for
    the lazy loader (``_EXPORTS``): the two lists must name the same names from the same
    modules, or a checker and the running code see different packages."""
    import ast
    import inspect

    import kinetic_protocol

    tree = ast.parse(inspect.getsource(kinetic_protocol))
    guarded = next(
        node
        for node in tree.body
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING"
    )
    imported: dict[str, set[str]] = {}
    for node in guarded.body:
        assert isinstance(node, ast.ImportFrom), ast.unparse(node)
        assert node.module is not None
        module = node.module.removeprefix("kinetic_protocol.")
        imported.setdefault(module, set()).update(alias.name for alias in node.names)
    assert imported == {m: set(names) for m, names in kinetic_protocol._EXPORTS.items()}


@pytest.mark.parametrize(
    ("state", "host"),
    [
        (JobState(status=JobStatus.FAILED, detail="host 1 of 2: exit 5"), 1),
        (JobState(status=JobStatus.FAILED, detail="host 3 of 4"), 3),
        (JobState(status=JobStatus.FAILED, detail="exit 5"), None),  # one host
        (JobState(status=JobStatus.PENDING, detail="host 1 of 2: waiting for its pod"), None),
        (JobState(status=JobStatus.FAILED, detail="the host 1 of 2 said"), None),
    ],
)
def test_the_failed_host_is_read_from_a_failure_that_names_it(
    state: JobState, host: int | None
) -> None:
    assert state.failed_host == host
