"""``kinetic batch ...`` against real batches on the local backend."""

import json
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

pytest.importorskip("kinetic.batch")

from kinetic import JobStatus

pytestmark = pytest.mark.usefixtures("kinetic_env")


@pytest.fixture(scope="module")
def mixed(funcs: ModuleType) -> Any:
    """A finished batch of four inputs whose input 2 failed."""
    batch = funcs.square_unless_two.run_async_map([0, 1, 2, 3], name="squares", tags={"k": "v"})
    batch.wait(timeout=60)
    return batch


@pytest.fixture(scope="module")
def clean(funcs: ModuleType) -> Any:
    """A finished batch where every input succeeded."""
    batch = funcs.add.run_async_map([(1, 2), (3, 4)])
    batch.wait(timeout=60)
    return batch


def _json(result: Any) -> Any:
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


def test_list_shows_stored_batches(invoke, mixed, clean) -> None:
    result = invoke("batch", "list")
    assert result.exit_code == 0
    rows = {line.split()[0]: line.split() for line in result.stdout.splitlines()[1:]}
    assert rows[mixed.group_id][1:4] == ["squares", "square_unless_two", "4"]
    assert rows[clean.group_id][1:3] == ["add", "2"]
    listed = {b["group_id"]: b for b in _json(invoke("batch", "list", "--json"))}
    assert listed[mixed.group_id]["tags"] == {"k": "v"}
    assert listed[mixed.group_id]["total_expected"] == 4


def test_list_limit_caps_the_number_of_batches(invoke, mixed, clean) -> None:
    listed = _json(invoke("batch", "list", "--json", "--limit", "1"))
    assert len(listed) == 1


def test_status_counts_inputs_by_state(invoke, mixed) -> None:
    document = _json(invoke("batch", "status", mixed.group_id, "--json"))
    assert document["counts"]["succeeded"] == 3
    assert document["counts"]["failed"] == 1
    assert document["counts"]["finished"] == 4
    assert [j["status"] for j in document["jobs"]] == ["SUCCEEDED"] * 2 + ["FAILED", "SUCCEEDED"]
    human = invoke("batch", "status", mixed.group_id)
    assert human.exit_code == 0  # a read: failed children do not make it fail
    assert "SUCCEEDED  3" in human.stdout
    assert "FAILED     1" in human.stdout


def test_an_unknown_batch_is_exit_1_with_one_error_line(invoke) -> None:
    result = invoke("batch", "status", "grp-00000000")
    assert result.exit_code == 1
    assert result.stderr.startswith("Error: No batch 'grp-00000000'")
    assert len(result.stderr.strip().splitlines()) == 1


def test_watch_of_a_batch_with_a_failure_ends_with_exit_1(invoke, mixed) -> None:
    result = invoke("batch", "watch", mixed.group_id)
    assert result.exit_code == 1
    assert f"{mixed.group_id}: 4/4 finished (3 done, 0 running, 0 pending, 1 failed)" in (
        result.stdout
    )
    assert f"Batch {mixed.group_id} finished in" in result.stdout
    assert "\x1b[" not in result.stdout
    assert f"kinetic batch failures {mixed.group_id}" in result.stderr


def test_watch_json_reports_the_final_counts(invoke, clean) -> None:
    document = _json(invoke("batch", "watch", clean.group_id, "--json"))
    assert document["counts"]["succeeded"] == 2
    assert document["counts"]["failed"] == 0


def test_watch_on_a_terminal_draws_a_progress_bar(invoke, clean) -> None:
    result = invoke("batch", "watch", clean.group_id, env={"TTY_COMPATIBLE": "1"})
    assert result.exit_code == 0
    assert "\x1b[" in result.stdout  # rich drew it
    assert "2/2" in result.stdout
    assert f"Batch {clean.group_id} finished in" in result.stdout


def test_failures_show_each_failed_input_with_its_log_tail(invoke, mixed) -> None:
    result = invoke("batch", "failures", mixed.group_id)
    assert result.exit_code == 0
    failed_id = mixed.jobs[2].job_id
    assert f"[2] {failed_id}  FAILED (exit 1)" in result.stdout
    assert "    two is refused" in result.stdout
    assert "RuntimeError: two is not allowed" in result.stdout
    document = _json(invoke("batch", "failures", mixed.group_id, "--json", "--tail", "3"))
    [entry] = document["failures"]
    assert (entry["index"], entry["job_id"], entry["status"]) == (2, failed_id, "FAILED")
    assert len(entry["logs"].splitlines()) == 3


# Clear the screen, retitle the window, a hyperlink, an 8-bit CSI, a carriage return.
HOSTILE = "\x1b[2J\x1b]0;pwned\x07\x1b]8;;http://evil\x1b\\link\x9b31m\rend"


def test_failures_show_store_text_without_terminal_escapes(invoke, funcs) -> None:
    batch = funcs.fail_saying.run_async_map([HOSTILE])
    batch.wait(timeout=60)
    shown = invoke("batch", "failures", batch.group_id)
    assert shown.exit_code == 0, shown.stderr
    shown_text = r"\x1b[2J\x1b]0;pwned\x07\x1b]8;;http://evil\x1b\link\x9b31m"
    assert f"    {shown_text}\n" in shown.stdout  # the log line ("\r" splits lines)
    assert f"RuntimeError: {shown_text}\n" in shown.stdout
    assert not any(c in shown.stdout + shown.stderr for c in "\x1b\x07\x9b\r")
    document = _json(invoke("batch", "failures", batch.group_id, "--json"))
    assert HOSTILE.partition("\r")[0] in document["failures"][0]["logs"]  # JSON escapes it


def test_results_print_in_input_order_and_exit_1_on_a_failure(invoke, mixed) -> None:
    result = invoke("batch", "results", mixed.group_id, "--no-cleanup")
    assert result.exit_code == 1
    rows = [line.split(None, 2) for line in result.stdout.splitlines()[1:]]
    assert rows == [
        ["0", "SUCCEEDED", "0"],
        ["1", "SUCCEEDED", "1"],
        ["2", "FAILED", "RuntimeError: two is not allowed"],
        ["3", "SUCCEEDED", "9"],
    ]
    assert result.stderr.startswith(f"Error: 1 of 4 inputs of batch {mixed.group_id} failed")


def test_results_json_and_out_file_hold_the_same_document(invoke, mixed, tmp_path) -> None:
    out = tmp_path / "results.json"
    result = invoke("batch", "results", mixed.group_id, "--no-cleanup", "--json", "--out", str(out))
    assert result.exit_code == 1
    document = json.loads(result.stdout)
    assert json.loads(out.read_text()) == document
    items = document["results"]
    assert [item.get("value") for item in items] == [0, 1, None, 9]
    assert items[2]["error"] == {"type": "RuntimeError", "message": "two is not allowed"}
    assert mixed.jobs[0].status() is JobStatus.SUCCEEDED  # --no-cleanup kept them


def test_results_out_writes_the_file_and_says_so(invoke, clean, tmp_path) -> None:
    out = tmp_path / "r.json"
    result = invoke("batch", "results", clean.group_id, "--no-cleanup", "--out", str(out))
    assert result.exit_code == 0, result.stderr
    assert result.stdout == f"Wrote 2 results (0 failed) to {out}.\n"
    assert [item["value"] for item in json.loads(out.read_text())["results"]] == [3, 7]


@pytest.mark.parametrize(
    ("out", "says"),
    [
        ("missing-dir/r.json", "there is no directory"),
        ("/proc/version", "no file can be created in '/proc'"),
    ],
    ids=["missing-dir", "proc"],
)
def test_results_check_out_before_collecting_anything(invoke, funcs, tmp_path, out, says) -> None:
    """A path that cannot be written is a usage error before any child is collected (and
    cleaned up), never an "Unexpected OSError" afterwards."""
    if out.startswith("/proc") and not Path(out).is_file():
        pytest.skip("no /proc here")
    batch = funcs.add.run_async_map([(5, 5)])
    batch.wait(timeout=60)
    target = out if out.startswith("/") else str(tmp_path / out)
    result = invoke("batch", "results", batch.group_id, "--out", target)
    assert result.exit_code == 2, result.output
    assert f"Cannot write the results to '{target}'" in result.stderr and says in result.stderr
    assert "Unexpected" not in result.stderr
    assert batch.jobs[0].status() is JobStatus.SUCCEEDED  # not collected, so not cleaned up


def test_results_clean_up_each_child_by_default(invoke, funcs) -> None:
    batch = funcs.add.run_async_map([(5, 5)])
    result = invoke("batch", "results", batch.group_id)
    assert result.exit_code == 0, result.stderr
    assert result.stdout.splitlines()[1].split() == ["0", "SUCCEEDED", "10"]
    assert batch.jobs[0].status() is JobStatus.NOT_FOUND


def test_timeouts_exit_3_then_cancel_then_cleanup(invoke, funcs, tmp_path, wait_until) -> None:
    gate = str(tmp_path / "never")
    batch = funcs.gated.run_async_map([gate, gate], input_mode="single")
    wait_until(lambda: all(job is not None for job in batch.jobs), "both inputs submitted")
    for waiting in (["watch"], ["results"]):
        timed_out = invoke("batch", *waiting, batch.group_id, "--timeout", "0.1")
        assert timed_out.exit_code == 3, timed_out.stderr
        assert "keep running" in timed_out.stderr
        # In a shell, the advice names shell commands, not the Python handle's methods.
        assert f"kinetic batch cancel {batch.group_id}" in timed_out.stderr
        assert "batch.cancel()" not in timed_out.stderr
    result = invoke("batch", "cancel", batch.group_id)
    assert result.exit_code == 0, result.stderr
    assert [status for _, status in batch.statuses()] == [JobStatus.NOT_FOUND] * 2
    result = invoke("batch", "cleanup", batch.group_id)
    assert result.exit_code == 0, result.stderr
    gone = invoke("batch", "status", batch.group_id)
    assert gone.exit_code == 1
    assert "No batch" in gone.stderr


def test_cleanup_of_nothing_is_a_usage_error(invoke, clean) -> None:
    assert invoke("batch", "cleanup", clean.group_id, "--no-k8s", "--no-gcs").exit_code == 2


def test_subprocess_watch_follows_a_running_batch_to_its_end(
    funcs, tmp_path: Path, popen_cli
) -> None:
    gate = tmp_path / "gate"
    batch = funcs.gated.run_async_map([str(gate)] * 2, input_mode="single")
    process = popen_cli("batch", "watch", batch.group_id, "--interval", "0.1")
    assert process.stdout is not None
    first = process.stdout.readline()
    assert first.startswith(f"{batch.group_id}: 0/2 finished")
    assert process.poll() is None
    gate.touch()
    rest, stderr = process.communicate(timeout=60)
    assert process.returncode == 0, stderr
    assert f"{batch.group_id}: 2/2 finished (2 done" in rest
    assert rest.rstrip().splitlines()[-1].startswith(f"Batch {batch.group_id} finished in")


def test_watch_of_a_batch_that_left_inputs_unsubmitted_ends_with_exit_1(
    invoke, funcs, tmp_path, wait_until
) -> None:
    """A batch whose submission stopped early has not finished: watch said so with exit 0."""
    gate = str(tmp_path / "never")
    batch = funcs.gated.run_async_map([gate] * 3, input_mode="single", max_concurrent=1)
    wait_until(lambda: batch.jobs[0] is not None, "input 0 submitted")
    assert invoke("batch", "cancel", batch.group_id).exit_code == 0
    result = invoke("batch", "watch", batch.group_id)
    assert result.exit_code == 1, result.stderr
    assert f"2 of 3 inputs of batch {batch.group_id} never ran" in result.stderr
    assert "cancelled" in result.stderr


# Clear the screen; retitle the window (OSC, ended by BEL); a bare BEL.
HOSTILE_NAMES = ["\x1b[2J", "\x1b]0;pwned\x07", "\x07"]


@pytest.mark.parametrize("command", ["status", "failures", "results"])
def test_store_key_names_reach_the_terminal_escaped(invoke, funcs, command: str) -> None:
    """A file named with escape sequences under a batch's ``children/``, ``lease/`` or
    ``errors/`` reached the terminal raw in the warning that ignores it."""
    from kinetic_protocol import layout

    batch = funcs.add.run_async_map([(1, 2)])
    batch.wait(timeout=60)
    batch.wait_submitted()
    records = batch._records
    store = records.store
    # Its submitter gone without a completion record: every command reads its leases.
    store.delete(layout.completion_key(batch.group_id))
    lease, _ = records.leases()
    assert lease is not None
    lease.heartbeat_at = "2000-01-01T00:00:00+00:00"
    records.write_lease(lease)
    planted = [
        prefix(batch.group_id) + f"{name}.json"
        for prefix in (
            layout.children_prefix,
            layout.leases_prefix,
            layout.submission_errors_prefix,
        )
        for name in HOSTILE_NAMES
    ]
    for key in planted:
        store.write(key, b"{}")
    shown = invoke("batch", command, batch.group_id, *(["--no-cleanup"] * (command == "results")))
    assert shown.exit_code == 0, shown.stderr
    out = shown.stdout + shown.stderr
    assert not any(c in out for c in "\x1b\x07"), out
    for key in planted:
        escaped = key.replace("\x1b", r"\x1b").replace("\x07", r"\x07")
        assert escaped in shown.stderr, (escaped, shown.stderr)


@pytest.mark.parametrize("tamper", ["deleted", "changed"])
def test_failures_and_results_agree_when_a_failure_summary_is_deleted_or_changed(
    invoke, funcs, tamper: str
) -> None:
    """``results(cleanup=True)`` keeps each failed child's cause and last lines with the batch.
    With that summary deleted or changed, ``batch failures`` called a failure "not a failure"
    while ``results()`` still raised the input's error."""
    import kinetic
    from kinetic_protocol import layout

    batch = funcs.square_or_die.run_async_map([0, 1, 2])
    first = batch.results(timeout=60, return_exceptions=True)  # cleans up, keeps summaries
    store = batch._records.store
    summaries = store.list(layout.collected_failures_prefix(batch.group_id))
    assert summaries, "the collection kept no failure summary"
    for key in summaries:
        if tamper == "deleted":
            store.delete(key)
        else:
            store.write(key, store.read(key).replace(b'"last_lines":"', b'"last_lines":"x'))

    shown = invoke("batch", "failures", batch.group_id)
    document = _json(invoke("batch", "failures", batch.group_id, "--json"))
    again = kinetic.attach_batch(batch.group_id, backend="local").results(
        timeout=60, return_exceptions=True
    )
    raised = [i for i, outcome in enumerate(again) if isinstance(outcome, BaseException)]
    assert raised == [i for i, outcome in enumerate(first) if isinstance(outcome, BaseException)]
    assert raised == [1, 2]
    assert [entry["index"] for entry in document["failures"]] == raised
    assert shown.stdout.count("not a failure") == 1  # input 0, which succeeded
    assert "RuntimeError: one is not allowed" in shown.stdout  # the kept outcome says why
    assert shown.stdout.count("no failure summary kept with the batch verifies for it") == 2
    for key in summaries if tamper == "changed" else []:
        assert f"Ignoring {store.uri}/{key} in batch {batch.group_id}" in shown.stderr
