"""Which hosts' output a ``host=`` selection names: one rule and one error for every backend."""

import pytest

from kinetic_protocol import ConfigError
from kinetic_protocol.host_groups import selected_hosts


def test_all_is_every_host_none_the_default_and_an_index_itself() -> None:
    assert selected_hosts("j", 3, "all") == [0, 1, 2]
    assert selected_hosts("j", 3, None) == [0]
    assert selected_hosts("j", 3, None, default=2) == [2]
    assert selected_hosts("j", 3, 1) == [1]


@pytest.mark.parametrize("host", [3, -1, True])
def test_a_host_out_of_range_is_refused_naming_the_range(host: object) -> None:
    with pytest.raises(ConfigError, match=r"Job j has no host .*: it runs on 3 hosts \(0\.\.2\)"):
        selected_hosts("j", 3, host)  # type: ignore[arg-type]
