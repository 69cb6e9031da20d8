"""How long ``kinetic up`` sleeps between reads of a Google Cloud long-running operation:
``google.api_core``'s own pace, unless ``KINETIC_GKE_POLL`` bounds it (as tests do, whose
fake operations end on their second read)."""

from typing import Any

import pytest
from google.api_core.future.polling import PollingFuture

from kinetic_gke.provision.clients import wait_operation
from kinetic_protocol import ConfigError


class _EndsOnItsFourthRead(PollingFuture):  # type: ignore[misc]
    """An operation whose fourth status read finds it done."""

    def __init__(self) -> None:
        super().__init__()
        self.reads = 0

    def done(self, retry: Any = None) -> bool:
        self.reads += 1
        if self.reads == 4:
            self.set_result("made")
        return self.reads >= 4

    def cancel(self) -> bool:
        return False

    def cancelled(self) -> bool:
        return False


@pytest.fixture
def slept(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """Each sleep between reads, at the longest its jitter allows, without sleeping."""
    from google.api_core.retry import retry_base, retry_unary

    sleeps: list[float] = []
    monkeypatch.setattr(retry_base.random, "uniform", lambda low, high: high)
    monkeypatch.setattr(retry_unary.time, "sleep", sleeps.append)
    return sleeps


def test_an_operation_is_read_at_googles_pace_by_default(
    slept: list[float], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("KINETIC_GKE_POLL", raising=False)
    assert wait_operation("making it", _EndsOnItsFourthRead()) == "made"
    assert slept == [1.0, 1.5, 2.25]


def test_the_poll_setting_bounds_the_sleeps_between_reads(
    slept: list[float], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KINETIC_GKE_POLL", "0.05,0.1")
    assert wait_operation("making it", _EndsOnItsFourthRead()) == "made"
    assert slept == pytest.approx([0.05, 0.075, 0.1])


def test_a_malformed_poll_setting_is_refused_naming_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KINETIC_GKE_POLL", "fast")
    with pytest.raises(ConfigError, match=r"KINETIC_GKE_POLL must be 'LOW,HIGH'.*'fast'"):
        wait_operation("making it", _EndsOnItsFourthRead())
