"""Where a debug job's server listens follows the backend's capability, never its name."""

import pytest

from kinetic.submission.debugging import debug_options
from kinetic_protocol import DEFAULT_DEBUG_PORT, Capabilities, DebugOptions


def test_a_forwarding_backend_gets_the_usual_port_on_every_interface(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("KINETIC_DEBUG_WAIT", raising=False)
    options = debug_options(Capabilities(debug_port_forward=True))
    assert options == DebugOptions(host="0.0.0.0", port=DEFAULT_DEBUG_PORT, wait_timeout=600.0)


def test_a_backend_on_this_machine_gets_loopback_and_any_free_port(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("KINETIC_DEBUG_WAIT", "2.5")
    options = debug_options(Capabilities(debug_port_forward=False))
    assert options == DebugOptions(host="127.0.0.1", port=0, wait_timeout=2.5)
