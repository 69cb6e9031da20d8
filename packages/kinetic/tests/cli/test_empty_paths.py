"""An empty path option (an unset shell variable, most likely) is a usage error naming it, not
the current directory: ``--download ""`` used to download into wherever the shell stood."""

from pathlib import Path

import pytest

pytestmark = pytest.mark.usefixtures("kinetic_env")  # with the bug, commands reach a store

PATH_OPTIONS = [
    ("jobs", "outputs", "job-0", "--download"),
    ("batch", "results", "grp-00000000", "--out"),
    ("batch", "timeline", "grp-00000000", "--out"),
]


@pytest.mark.parametrize("command", PATH_OPTIONS, ids=lambda c: " ".join(c[:2]))
@pytest.mark.parametrize("value", ["", " "], ids=["empty", "blank"])
def test_an_empty_path_is_a_usage_error_and_nothing_is_written(
    invoke, command, value, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    result = invoke(*command, value)
    assert result.exit_code == 2, result.output
    assert f"{value!r} is an empty path" in result.stderr and command[-1] in result.stderr
    assert list(tmp_path.iterdir()) == []
