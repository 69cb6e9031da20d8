"""``run_async_map(max_cost=...)``: every cap that could not act is refused before anything is
resolved or stored, naming the value and what to do; a cap on a backend that bills nothing is
accepted with a word that it never stops the batch (issue 52). The cap at work, on the real
control plane: ``tests/scenarios/test_capacity.py``."""

from typing import Any

import pytest

import kinetic
from kinetic_protocol import ConfigError
from kinetic_protocol.prices import PRICES_ENV


def identity(x: Any) -> Any:
    return x


def _remote(**options: Any) -> Any:
    return kinetic.run(backend="local", **options)(identity)


@pytest.mark.parametrize(
    ("value", "error"),
    [
        (0, ConfigError),
        (-1.5, ConfigError),
        (float("nan"), ConfigError),
        (float("inf"), ConfigError),
    ]
    + [(bad, TypeError) for bad in (True, "5", [5])],
    ids=repr,
)
def test_max_cost_must_be_a_positive_number_of_dollars(
    nothing_resolved: None, value: Any, error: type[Exception]
) -> None:
    with pytest.raises(error, match="max_cost") as info:
        _remote(accelerator="gpu-l4").run_async_map([1], max_cost=value)
    assert repr(value) in str(info.value)


def test_a_cap_needs_a_limit_on_how_many_run_at_once(nothing_resolved: None) -> None:
    with pytest.raises(ConfigError, match="max_concurrent=None submits every input at once"):
        _remote(accelerator="gpu-l4").run_async_map([1], max_cost=5, max_concurrent=None)


def test_a_cap_on_a_cpu_batch_is_refused(nothing_resolved: None) -> None:
    with pytest.raises(ConfigError, match="accelerator='cpu' has none"):
        _remote(accelerator="cpu").run_async_map([1], max_cost=5)


def test_a_cap_needs_a_list_price_for_every_choice(
    nothing_resolved: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(PRICES_ENV, raising=False)
    with pytest.raises(ConfigError) as info:
        _remote(accelerator="gpu-h200-x8").run_async_map([1], max_cost=5)
    assert "gpu-h200-x8 (on-demand) has none" in str(info.value)
    assert PRICES_ENV in str(info.value)


def test_the_local_backend_takes_a_cap_and_says_that_it_never_stops_the_batch(
    caplog: pytest.LogCaptureFixture,
) -> None:
    remote = kinetic.run(backend="local", accelerator="gpu-l4")(abs)
    batch = remote.run_async_map([-1, 2], max_cost=1e-9, max_concurrent=1)
    assert batch.results(timeout=60) == [1, 2]
    assert "bills nothing, so the cap never stops this batch" in caplog.text
    assert batch.usage() is None, "nothing billed ran"
