"""One ``Data`` object used for several submissions while its files change: every job sees the
files as they were when it was submitted, on every backend (gke and pathways ship local data
through the store, where an old upload must not stand in for the new bytes)."""

from pathlib import Path

import data_userfuncs as uf
import pytest
from data_support import capabilities, uploaded_hashes
from scenario_support import ScenarioBackend

from kinetic import Data

pytestmark = [pytest.mark.gcs, pytest.mark.backends("local", "example-gcs", "gke", "pathways")]


def test_a_reused_data_ships_its_files_as_they_are_at_each_submission(
    kinetic_backend: ScenarioBackend, tmp_path: Path
) -> None:
    root = tmp_path / "dataset"
    root.mkdir()
    (root / "train.csv").write_text("version 1\n")
    data = Data(str(root))
    read_tree = kinetic_backend.decorate()(uf.read_tree)

    assert read_tree(data) == {"train.csv": "version 1\n"}
    (root / "train.csv").write_text("version 2\n")
    (root / "extra.txt").write_text("added later\n")
    expected = {"extra.txt": "added later\n", "train.csv": "version 2\n"}
    assert read_tree(data) == expected, "the same Data object, the files as they are now"
    can = capabilities(kinetic_backend)
    if can.volumes:  # the decorator's volume too, and the same object as an argument
        read_volume = kinetic_backend.decorate(volumes={"/data": data})(uf.volume_and_argument)
        (root / "train.csv").write_text("version 3\n")
        seen = read_volume(data)
        expected["train.csv"] = "version 3\n"
        assert seen["at_volume"] == seen["via_argument"] == expected
    if not can.local_data:  # shipped through the store, once per version
        assert len(uploaded_hashes(kinetic_backend)) == (3 if can.volumes else 2)
