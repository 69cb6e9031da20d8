"""The backend contract, checked whole: every method a backend must have and every optional one
a capability flag promises, each taking the calls the client makes of it.

The client calls a backend as :class:`~kinetic_protocol.Backend` (and, for its flags,
:class:`~kinetic_protocol.ArrayBackend` and :mod:`kinetic_protocol.optional`) declare; a
method that cannot take one of those calls fails in a user's job, not here, unless it is
checked. So each method's signature is tried with the fewest and the most arguments the client
passes (``signing_keys(create=...)`` and ``signing_keys(create=..., refresh=...)``), and a
problem names the method and what it does not take. The workspace's conformance test
(``tests/test_optional_contract.py``) runs this over every installed backend.
"""

import inspect
from collections.abc import Sequence
from typing import Any

from kinetic_protocol.backend import ArrayBackend, Backend, Capabilities
from kinetic_protocol.optional import PortForwarding
from kinetic_protocol.settings import SettingSpec

__all__ = ["backend_problems", "contract_problems", "method_problem"]

REQUIRED_METHODS = tuple(
    name
    for name, value in vars(Backend).items()
    if inspect.isfunction(value) and not name.startswith("_")
)
"""What every backend defines: the methods of :class:`~kinetic_protocol.Backend`, in its
order (``prepare`` ... ``list_job_ids``)."""

_PROMISED_BY_FLAG: dict[str, tuple[type, tuple[str, ...]]] = {
    "debug_port_forward": (PortForwarding, ("port_forward_command",)),
    "array_batches": (ArrayBackend, ("submit_array", "delete_array")),
}
"""Each capability flag that promises optional methods: their protocol, and the methods."""

_ONLY_WITH_FLAG = {"host": "per_host_logs"}
"""Parameters the client passes only to a backend that declares a flag (``logs(host=...)``)."""


def _plain(signature: inspect.Signature) -> str:
    """``(record, *, env=NO_ENV)``: a signature as the docs write it, without annotations."""
    parameters = [
        p.replace(annotation=inspect.Parameter.empty) for p in signature.parameters.values()
    ]
    shown = str(inspect.Signature(parameters))
    return shown.replace("=mappingproxy({})", "=NO_ENV")


def _shown(protocol: type, name: str) -> str:
    """``submit(record, *, env=NO_ENV)``: how the contract declares the method."""
    parameters = list(inspect.signature(getattr(protocol, name)).parameters.values())[1:]
    return f"{name}{_plain(inspect.Signature(parameters))}"


def _calls(protocol: type, name: str, flags: Capabilities | None) -> list[inspect.BoundArguments]:
    """The fewest and the most arguments the client passes, bound to the contract's own
    signature (``self`` left out), so each can be tried on an implementation."""
    declared = inspect.signature(getattr(protocol, name))
    parameters = list(declared.parameters.values())[1:]
    contract = inspect.Signature(parameters)
    fewest: tuple[list[object], dict[str, object]] = ([], {})
    most: tuple[list[object], dict[str, object]] = ([], {})
    for parameter in parameters:
        flag = _ONLY_WITH_FLAG.get(parameter.name)
        passed = flag is None or bool(getattr(flags, flag, False))
        required = parameter.default is inspect.Parameter.empty
        if parameter.kind is inspect.Parameter.KEYWORD_ONLY or not required:
            if required:
                fewest[1][parameter.name] = object()
            if passed:
                most[1][parameter.name] = object()
        else:
            fewest[0].append(object())
            most[0].append(object())
    return [contract.bind(*args, **kwargs) for args, kwargs in (fewest, most)]


def method_problem(
    backend: object, protocol: type, name: str, flags: Capabilities | None = None
) -> str | None:
    """Why ``backend``'s method ``name`` cannot take the calls ``protocol`` declares for it
    (missing, not callable, or a signature that refuses one of them); None if it can."""
    method = getattr(backend, name, None)
    wanted = _shown(protocol, name)
    if not callable(method):
        return f"has no {wanted} ({protocol.__name__})"
    try:
        own = inspect.signature(method)
    except (TypeError, ValueError):  # a builtin or C method: nothing to read
        return None
    parameters = list(own.parameters.values())
    if (
        isinstance(backend, type)
        and parameters
        and not isinstance(inspect.getattr_static(backend, name), staticmethod | classmethod)
    ):
        own = own.replace(parameters=parameters[1:])  # the class's function: drop self
    for call in _calls(protocol, name, flags):
        try:
            own.bind(*call.args, **call.kwargs)
        except TypeError as refused:
            return (
                f"{name}{_plain(own)} does not take the calls of {wanted} "
                f"({protocol.__name__}): {refused}"
            )
    return None


def contract_problems(backend: object) -> list[str]:
    """What ``backend`` (a backend or its registered class) promises and lacks: one line per
    capability flag set without the methods it needs (or with one that does not take the
    client's calls, ``per_host_logs`` included: ``logs`` and ``follow_logs`` then take
    ``host=``), and per optional attribute of the wrong shape. Empty when it keeps its
    optional contract."""
    problems = []
    capabilities = getattr(backend, "capabilities", None)
    for flag, (protocol, names) in _PROMISED_BY_FLAG.items():
        if not getattr(capabilities, flag, False):
            continue
        for name in names:
            problem = method_problem(backend, protocol, name, capabilities)
            if problem is not None:
                problems.append(f"declares {flag} but {problem}")
    if getattr(capabilities, "per_host_logs", False):
        for name in ("logs", "follow_logs"):  # their host= is passed only with the flag
            problem = method_problem(backend, Backend, name, capabilities)
            if problem is not None and method_problem(backend, Backend, name) is None:
                problems.append(f"declares per_host_logs but {problem}")
    related = getattr(backend, "related_backends", ())
    if isinstance(related, str) or not all(isinstance(name, str) for name in related):
        problems.append(f"related_backends must be a sequence of backend names, not {related!r}")
    return problems


def _attribute_problems(backend: object) -> list[str]:
    """The attributes the client reads without building the backend (``capabilities``,
    ``declared_settings``) and, of a built one, ``name``, ``store_uri`` and ``poll_bounds``."""
    problems = []
    if not isinstance(getattr(backend, "capabilities", None), Capabilities):
        problems.append("capabilities must be a kinetic_protocol.Capabilities")
    declared = getattr(backend, "declared_settings", None)
    if not isinstance(declared, Sequence) or not all(isinstance(s, SettingSpec) for s in declared):
        problems.append("declared_settings must be a sequence of SettingSpec")
    if isinstance(backend, type):
        return problems  # the rest may be set when it is built
    for name in ("name", "store_uri"):
        if not isinstance(getattr(backend, name, None), str):
            problems.append(f"{name} must be a str")
    bounds: Any = getattr(backend, "poll_bounds", None)
    if not (
        isinstance(bounds, tuple)
        and len(bounds) == 2
        and all(isinstance(bound, int | float) for bound in bounds)
        and 0 < bounds[0] <= bounds[1]
    ):
        problems.append(
            f"poll_bounds must be (shortest, longest) seconds between polls, 0 < shortest "
            f"<= longest, not {bounds!r}"
        )
    return problems


def backend_problems(backend: object) -> list[str]:
    """Everything ``backend`` (a backend, or the class its entry point names) lacks of the
    whole contract: the attributes, every method :class:`~kinetic_protocol.Backend` declares,
    and the optional contract (:func:`contract_problems`). A factory that is no class is only
    checked for what is read from it unbuilt."""
    problems = _attribute_problems(backend)
    if callable(backend) and not isinstance(backend, type):
        return problems + contract_problems(backend)
    for name in REQUIRED_METHODS:
        problem = method_problem(backend, Backend, name)
        if problem is not None:
            problems.append(problem)
    return problems + contract_problems(backend)
