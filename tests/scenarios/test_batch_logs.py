"""``BatchHandle.logs`` and ``kinetic batch logs``: every child's output as one stream, on the
local backend (real child processes writing real log files)."""

import threading
from pathlib import Path

import batch_userfuncs as uf
import pytest
from batch_support import four_local_slots  # noqa: F401 (an autouse fixture)
from click.testing import CliRunner
from scenario_support import ScenarioBackend, wait_until

from kinetic.batch.logs import check_options
from kinetic.cli import cli
from kinetic_protocol import ConfigError


def test_logs_of_a_finished_batch_are_one_stream_prefixed_by_input(
    local_backend: ScenarioBackend, tmp_path: Path
) -> None:
    say = local_backend.decorate()(uf.say)
    batch = say.run_async_map([{"name": "a"}, {"name": "b", "fail": True}, {"name": "c"}])
    batch.wait(timeout=60)

    text = batch.logs()
    assert text is not None
    for index, name in enumerate("abc"):
        assert f"[{index}] hello from {name}\n" in text
        assert f"[{index}] goodbye from {name}\n" in text
    assert text.index("[0] hello") < text.index("[1] hello") < text.index("[2] hello")
    assert all(line.startswith(("[0] ", "[1] ", "[2] ")) for line in text.splitlines())

    failed = batch.logs(failed=True)
    assert failed is not None
    assert "[1] hello from b" in failed and "BatchUserError: b fails" in failed
    assert "[0]" not in failed and "[2]" not in failed

    result = CliRunner().invoke(
        cli, ["--backend", "local", "batch", "logs", batch.group_id, "--tail", "1"]
    )
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert [line.split("]")[0] for line in lines] == ["[0", "[1", "[2"], "one line per child"
    assert lines[0] == "[0] goodbye from a" or "[0]" in lines[0]


def test_following_a_batch_picks_up_children_as_they_start_and_ends_with_it(
    local_backend: ScenarioBackend, tmp_path: Path
) -> None:
    say = local_backend.decorate()(uf.say)
    gate = tmp_path / "gate"
    batch = say.run_async_map(
        [{"name": "first", "wait_for": str(gate)}, {"name": "second"}, {"name": "third"}],
        max_concurrent=1,
    )
    seen: list[str] = []
    follower = threading.Thread(target=lambda: seen.extend(batch.log_lines(follow=True)))
    follower.start()
    wait_until(lambda: "[0] hello from first\n" in seen, "input 0's first line, followed live")
    assert not any(line.startswith("[1]") for line in seen), "input 1 has not started yet"
    gate.touch()
    follower.join(timeout=90)
    assert not follower.is_alive(), "following ends once the batch has settled"
    for index, name in enumerate(["first", "second", "third"]):
        assert f"[{index}] hello from {name}\n" in seen
        assert f"[{index}] goodbye from {name}\n" in seen


def test_following_failures_shows_each_failed_attempt_and_its_retry(
    local_backend: ScenarioBackend, tmp_path: Path
) -> None:
    step = local_backend.decorate()(uf.step)
    batch = step.run_async_map(
        [{"value": "ok"}, {"value": "flaky", "fail_attempt_0": True}], retries=1
    )
    text = "".join(batch.log_lines(follow=True, failed=True, tail=5))
    # The local backend deletes a retried attempt's process directory, its log with it; the
    # failure it stored is still shown.
    assert "[1] failed: batch_userfuncs.BatchUserError: attempt 0 for 'flaky' fails\n" in text
    assert "[1 r1]" not in text, "the retry succeeded"
    assert "[0]" not in text
    everything = batch.logs()
    assert everything is not None and "[1 r1] " in everything

    # Following everything says each failure too, though the failed attempt's output is gone.
    followed = "".join(batch.log_lines(follow=True))
    assert "[1] failed: batch_userfuncs.BatchUserError: attempt 0 for 'flaky' fails\n" in followed
    assert "[1 r1] " in followed and "[0] " in followed


def test_tail_with_follow_is_refused_before_anything_is_read(
    local_backend: ScenarioBackend,
) -> None:
    result = CliRunner().invoke(
        cli, ["--backend", "local", "batch", "logs", "grp-nope", "--follow", "--tail", "3"]
    )
    assert result.exit_code != 0
    assert "--tail" in result.output or "tail=3" in result.output
    assert "No batch" not in result.output
    with pytest.raises(ConfigError, match="tail=-1"):
        check_options(follow=False, failed=False, tail=-1)


def test_a_multi_host_childs_lines_name_their_host(local_backend: ScenarioBackend) -> None:
    say = local_backend.decorate(accelerator="tpu-v5litepod-2x4")(uf.say)
    batch = say.run_async_map([{"name": "slice"}])
    batch.wait(timeout=90)
    text = batch.logs()
    assert text is not None
    assert "[0 host 0] hello from slice\n" in text
    assert "[0 host 1] hello from slice\n" in text
    assert all(line.startswith(("[0 host 0] ", "[0 host 1] ")) for line in text.splitlines())
