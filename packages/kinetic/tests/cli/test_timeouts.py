"""``--timeout nan`` waited for ever (a NaN deadline never passes): every waiting option
refuses NaN and negative seconds as a usage error that names the value, before doing anything."""

import math

import pytest

from kinetic._waiting import Deadline, check_timeout
from kinetic_protocol import ConfigError

pytestmark = pytest.mark.usefixtures("kinetic_env")  # with the bug, commands reach a store

WAITING_COMMANDS = [
    ("jobs", "result", "job-0"),
    ("jobs", "debug", "job-0"),
    ("batch", "results", "grp-00000000"),
    ("batch", "watch", "grp-00000000"),
]


@pytest.mark.parametrize("command", WAITING_COMMANDS, ids=lambda c: " ".join(c[:2]))
@pytest.mark.parametrize("value", ["nan", "NaN", "-1", "-inf", "soon"])
def test_a_timeout_that_is_not_seconds_is_a_usage_error(invoke, command, value) -> None:
    result = invoke(*command, "--timeout", value)
    assert result.exit_code == 2, result.output
    assert f"'{value}' is" in result.stderr and "--timeout" in result.stderr


@pytest.mark.parametrize("value", ["nan", "inf", "0.01"])
def test_batch_watch_interval_must_be_finite_seconds(invoke, value) -> None:
    result = invoke("batch", "watch", "grp-00000000", "--interval", value)
    assert result.exit_code == 2, result.output
    assert f"'{value}' is" in result.stderr and "--interval" in result.stderr


@pytest.mark.parametrize("value", [math.nan, -1.0, -math.inf])
def test_the_api_refuses_a_timeout_that_is_not_seconds(value: float) -> None:
    with pytest.raises(ConfigError, match=rf"timeout={value!r} is not a number of seconds"):
        Deadline(value)
    with pytest.raises(ConfigError, match="timeout=None to wait without limit"):
        check_timeout(value)


def test_an_infinite_timeout_means_no_limit() -> None:
    assert check_timeout(math.inf) is None
    assert not Deadline(math.inf).expired and Deadline(math.inf).remaining() is None
    assert check_timeout(0) == 0 and check_timeout(2.5) == 2.5
