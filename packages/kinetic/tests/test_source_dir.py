"""Which directory a call ships: found through partials, methods and wrappers (issue 16)."""

import functools
import json
from pathlib import Path

import pytest

from kinetic.submission.target import _source_dir

HERE = Path(__file__).resolve().parent


def project_function(a: int, b: int = 0) -> int:
    return a + b


class CallableThing:
    def __call__(self, x: int) -> int:
        return x

    def method(self, x: int) -> int:
        return x


def test_a_plain_function_ships_its_module_directory() -> None:
    assert _source_dir(project_function) == HERE


def test_a_partial_ships_the_directory_of_the_function_it_wraps() -> None:
    assert _source_dir(functools.partial(project_function, 1)) == HERE
    assert _source_dir(functools.partial(functools.partial(project_function, 1), 2)) == HERE


def test_wrappers_methods_and_callable_objects_ship_their_definition() -> None:
    @functools.wraps(project_function)
    def wrapper(*args: int) -> int:
        return project_function(*args)

    wrapper.__module__ = "functools"  # a wrapper defined elsewhere
    assert _source_dir(wrapper) == HERE
    assert _source_dir(CallableThing()) == HERE
    assert _source_dir(CallableThing().method) == HERE


def test_the_python_installation_is_refused_not_bundled() -> None:
    with pytest.raises(TypeError, match="Call it from a function of your own module"):
        _source_dir(functools.partial(json.dumps, indent=2))
    with pytest.raises(TypeError, match="Python installation"):
        _source_dir(json.dumps)


def test_code_with_no_source_file_ships_the_working_directory() -> None:
    assert _source_dir(len) == Path.cwd()
    assert _source_dir(functools.partial(pow, 2)) == Path.cwd()
