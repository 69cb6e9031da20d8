"""Job ids are valid Kubernetes names; pickling failures name the object that caused them."""

import re
import threading
from typing import Any

import cloudpickle
import pytest

from kinetic.packaging import serialize_call
from kinetic.submission import new_job_id
from kinetic_protocol import SerializationError

DNS_1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
ID_SHAPE = re.compile(r"^(?P<slug>.+)-(?P<date>\d{8})-(?P<time>\d{6})-(?P<random>[0-9a-f]{7})$")


@pytest.mark.parametrize(
    ("func_name", "slug"),
    [
        ("train", "train"),
        ("Train_Model", "train-model"),
        ("_private", "private"),
        ("<lambda>", "lambda"),
        ("Outer.<locals>.inner", "outer-locals-inner"),
        ("x" * 200, "x" * 39),
        ("λ", "job"),
        ("", "job"),
        ("2nd_pass", "job-2nd-pass"),
    ],
)
def test_job_ids_are_dns_labels_of_at_most_63_characters(func_name: str, slug: str) -> None:
    job_id = new_job_id(func_name)
    assert len(job_id) <= 63
    assert DNS_1123_LABEL.match(job_id), job_id
    shape = ID_SHAPE.match(job_id)
    assert shape, job_id
    assert shape["slug"] == slug
    assert "--" not in job_id
    assert job_id[0].isalpha()


def test_job_ids_are_unique_within_the_same_second() -> None:
    ids = {new_job_id("train") for _ in range(200)}
    assert len(ids) == 200


# --- serialization ---------------------------------------------------------------------------


def _add(a: Any, b: Any = 0) -> Any:
    return a + b


def test_a_picklable_call_round_trips() -> None:
    fn, args, kwargs = cloudpickle.loads(serialize_call(_add, (1,), {"b": 2}).payload)
    assert fn(*args, **kwargs) == 3


def test_an_unpicklable_positional_argument_is_named_with_its_repr() -> None:
    lock = threading.Lock()
    with pytest.raises(SerializationError) as caught:
        serialize_call(_add, (1, lock), {})
    message = str(caught.value)
    assert "Argument 1 of _add()" in message
    assert repr(lock) in message
    assert "(lock)" in message, "the type is named"
    assert "Pass plain data" in message


def test_an_unpicklable_keyword_argument_is_named() -> None:
    with pytest.raises(SerializationError, match=r"Keyword argument 'b' of _add\(\)"):
        serialize_call(_add, (1,), {"b": threading.Lock()})


def test_an_unpicklable_value_nested_in_an_argument_names_that_argument() -> None:
    with pytest.raises(SerializationError, match=r"Argument 0 of _add\(\).*\[1, <unlocked"):
        serialize_call(_add, ([1, threading.Lock()],), {})


def test_a_long_repr_is_shortened() -> None:
    class Unpicklable:
        def __reduce__(self) -> Any:
            raise TypeError("no pickling")

        def __repr__(self) -> str:
            return "U" * 500

    with pytest.raises(SerializationError) as caught:
        serialize_call(_add, (Unpicklable(),), {})
    assert "U" * 117 + "..." in str(caught.value)
    assert "U" * 121 not in str(caught.value)


def test_an_unpicklable_closure_variable_is_named() -> None:
    guard = threading.Lock()

    def locked() -> None:
        with guard:
            pass

    with pytest.raises(SerializationError, match=r"closure variable 'guard'.*\(lock\)"):
        serialize_call(locked, (), {})


def test_an_unpicklable_global_is_named() -> None:
    namespace: dict[str, Any] = {"__name__": "not_importable_module"}
    exec(  # a function of a module cloudpickle must pickle by value, like __main__'s
        "import threading\n"
        "LOCK = threading.Lock()\n"
        "def guarded():\n"
        "    with LOCK:\n"
        "        return 1\n",
        namespace,
    )
    with pytest.raises(
        SerializationError, match=r"Function guarded cannot be pickled: its global 'LOCK'"
    ):
        serialize_call(namespace["guarded"], (), {})


def test_serialization_errors_are_type_errors_and_keep_the_cause() -> None:
    with pytest.raises(TypeError) as caught:
        serialize_call(_add, (threading.Lock(),), {})
    assert isinstance(caught.value, SerializationError)
    assert caught.value.__cause__ is not None
