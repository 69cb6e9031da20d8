"""Until the gke backend runs a job of several hosts as a JobSet, it refuses ``nodes``/
``slices`` above 1 in ``prepare``, before anything is uploaded, saying where such a job runs
(issue 51; the JobSet work replaces this refusal)."""

import pytest

from kinetic_gke.backend import GKEBackend
from kinetic_protocol import ConfigError


def test_gke_refuses_several_hosts_saying_where_they_run() -> None:
    gke = GKEBackend.__new__(GKEBackend)  # the check reads no settings
    with pytest.raises(ConfigError, match=r"gke backend does not run a job on several hosts yet"):
        gke.check_host_groups(2, 1)
    with pytest.raises(ConfigError, match=r"\(slices=2\).*backend='local'"):
        gke.check_host_groups(1, 2)
    gke.check_host_groups(1, 1)
