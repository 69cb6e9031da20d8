"""A Pathways job is one TPU slice (a LeaderWorkerSet): several slices are refused in
``prepare``, before anything is uploaded, pointing to ``gke`` (issue 51)."""

import pytest

from kinetic_pathways.backend import PathwaysBackend
from kinetic_protocol import ConfigError


def test_pathways_refuses_several_slices_pointing_to_gke() -> None:
    pathways = PathwaysBackend.__new__(PathwaysBackend)  # the check reads no settings
    with pytest.raises(ConfigError, match=r"slices=2: the pathways backend runs one TPU slice"):
        pathways.check_host_groups(1, 2)
    with pytest.raises(ConfigError, match=r"backend='gke', which makes them one JobSet"):
        pathways.check_host_groups(1, 3)
    pathways.check_host_groups(1, 1)
