"""Options are checked at decoration time (env capture itself: test_env_capture.py)."""

import pytest

import kinetic
from kinetic._waiting import check_timeout
from kinetic.options import MAX_TIMEOUT_S, MapOptions, RunOptions
from kinetic_protocol import ConfigError


def test_a_single_string_instead_of_a_list_is_refused_with_a_hint() -> None:
    with pytest.raises(TypeError, match=r"Did you mean \['HF_TOKEN'\]"):
        kinetic.run(accelerator="cpu", capture_env_vars="HF_TOKEN")  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", ["1ABC", "A-B", "**", "A*B", "*A", "", "A B"])
def test_a_pattern_that_is_not_a_variable_name_is_refused(bad: str) -> None:
    with pytest.raises(ConfigError, match=repr(bad).replace("*", r"\*")):
        RunOptions.build(accelerator="cpu", capture_env_vars=[bad], volumes=None)


def test_an_unknown_accelerator_fails_at_decoration_not_at_call() -> None:
    with pytest.raises(ConfigError, match="Unknown accelerator 'gpu-x9000'"):
        kinetic.run(accelerator="gpu-x9000")


def test_volumes_need_absolute_mount_paths_and_data_objects() -> None:
    with pytest.raises(ConfigError, match="'data'"):
        kinetic.run(accelerator="cpu", volumes={"data": kinetic.Data("/tmp")})
    with pytest.raises(TypeError, match=r"volumes\['/data'\]"):
        kinetic.run(accelerator="cpu", volumes={"/data": "/tmp"})  # type: ignore[dict-item]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"capture_env_vars": 3}, "capture_env_vars must be a list"),
        ({"capture_env_vars": [3]}, "entry 3 must be a str"),
        ({"volumes": ["/data"]}, "volumes must be a dict"),
        ({"volumes": {3: "x"}}, "volumes key 3 must be a str"),
        ({"timeout": "60"}, "timeout must be a number of seconds .* str '60'"),
        ({"timeout": True}, "timeout must be a number of seconds .* bool True"),
        ({"preemption_retries": "3"}, "preemption_retries must be a non-negative int .* '3'"),
        ({"preemption_retries": 1.0}, "preemption_retries must be a non-negative int .* 1.0"),
        ({"preemption_retries": True}, "preemption_retries must be a non-negative int .* True"),
    ],
)
def test_a_wrong_type_is_a_type_error(options: dict[str, object], message: str) -> None:
    """The rule (docs/architecture.md, Errors): a wrong type is TypeError, a wrong value of the
    right type is ConfigError (a ValueError)."""
    with pytest.raises(TypeError, match=message):
        kinetic.run(accelerator="cpu", **options)  # type: ignore[arg-type]


def test_the_decorated_function_keeps_its_name_and_stays_callable_as_a_remote_function() -> None:
    def train(lr: float) -> float:
        """Train."""
        return lr

    remote = kinetic.run(accelerator="gpu-l4")(train)
    assert isinstance(remote, kinetic.RemoteFunction)
    assert remote.__name__ == "train" and remote.__doc__ == "Train."
    assert remote.__wrapped__ is train
    assert remote.options.accelerator.name == "gpu-l4"
    assert "gpu-l4" in repr(remote)


def test_decorating_something_that_is_not_callable_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="decorates a function"):
        kinetic.run(accelerator="cpu")(42)  # type: ignore[arg-type]


def test_the_decorator_without_parentheses_says_it_needs_them() -> None:
    with pytest.raises(TypeError, match=r"@kinetic.run needs parentheses") as info:

        @kinetic.run  # type: ignore[arg-type]
        def train() -> None: ...

    assert "@kinetic.run()" in str(info.value) and "def train" in str(info.value)
    assert "Unknown accelerator" not in str(info.value)


@pytest.mark.parametrize("bad", [0, -1, -0.5, float("inf"), float("nan")])
def test_a_timeout_that_is_not_a_positive_finite_number_is_refused_at_decoration(
    bad: float,
) -> None:
    with pytest.raises(ConfigError, match=r"timeout=.* must be a positive, finite number"):
        kinetic.run(accelerator="cpu", timeout=bad)


@pytest.mark.parametrize(
    "bad", [1e10, 10**400, MAX_TIMEOUT_S + 1], ids=["1e10", "10**400", "max+1"]
)
def test_a_timeout_past_the_largest_accepted_is_refused_at_decoration_naming_it(bad: float) -> None:
    """Past the limit a local job's supervisor cannot even wait that long (1e10 killed it)."""
    with pytest.raises(
        ConfigError, match=rf"longer than the largest accepted, {MAX_TIMEOUT_S} seconds"
    ):
        kinetic.run(accelerator="cpu", timeout=bad)


def test_the_largest_accepted_timeout_is_kept() -> None:
    assert (
        kinetic.run(accelerator="cpu", timeout=MAX_TIMEOUT_S)(len).options.timeout == MAX_TIMEOUT_S
    )


def test_a_negative_int_past_a_floats_range_is_refused_without_spelling_it_out() -> None:
    with pytest.raises(
        ConfigError, match=r"timeout=-an int of about 401 digits must be a positive"
    ):
        kinetic.run(accelerator="cpu", timeout=-(10**400))
    with pytest.raises(ConfigError, match=r"timeout=an int of about 5001 digits is longer than"):
        kinetic.run(accelerator="cpu", timeout=10**5000)


@pytest.mark.parametrize(
    ("given", "kept"),
    [(10**400, None), (10**300, 1e300), (5, 5.0)],
    ids=["10**400", "10**300", "5"],
)
def test_a_wait_of_an_int_past_a_floats_range_has_no_limit(given: int, kept: float | None) -> None:
    assert check_timeout(given) == kept


def test_a_negative_preemption_budget_is_refused_at_decoration() -> None:
    with pytest.raises(ConfigError, match=r"preemption_retries=-1 must be 0 or more"):
        kinetic.run(accelerator="cpu", preemption_retries=-1)


def test_the_preemption_budget_defaults_to_three_and_zero_is_allowed() -> None:
    assert kinetic.run(accelerator="cpu")(len).options.preemption_retries == 3
    assert kinetic.run(accelerator="cpu", preemption_retries=0)(len).options.preemption_retries == 0


def test_a_timeout_is_kept_as_seconds() -> None:
    assert kinetic.run(accelerator="cpu", timeout=90)(len).options.timeout == 90.0
    assert kinetic.run(accelerator="cpu", timeout=0.5)(len).options.timeout == 0.5
    assert kinetic.run(accelerator="cpu")(len).options.timeout is None


def _map_options(**given: object) -> "MapOptions":
    chosen: dict[str, object] = {
        "input_mode": "auto",
        "max_concurrent": 64,
        "retries": 0,
        "fail_fast": False,
        "cancel_running_on_fail": False,
        "name": None,
        "tags": None,
        "retry_on": None,
    }
    return MapOptions.build(**(chosen | given))


def test_map_options_are_checked_once_and_stored_as_the_manifest_keeps_them() -> None:
    """``run_async_map``'s options are one checked struct: tags copied, causes sorted and
    plain, and the first bad argument refused with its own type of error."""
    tags = {"team": "a"}
    options = _map_options(tags=tags, retry_on=[kinetic.FailureCause.OOM, "exit"])
    assert options.tags == tags and options.tags is not tags
    assert options.retry_on == ["exit", "oom"]
    assert type(options.retry_on[1]) is str
    assert _map_options().tags == {}
    with pytest.raises(TypeError, match="max_concurrent must be a positive int or None"):
        _map_options(max_concurrent="2", retries=-1)
    with pytest.raises(ConfigError, match="retries must be a non-negative int; got -1"):
        _map_options(retries=-1, name=3)
    with pytest.raises(TypeError, match="tags must be a dict of str to str"):
        _map_options(tags={"a": 1})
