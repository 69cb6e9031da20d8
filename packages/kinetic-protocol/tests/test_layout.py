"""The storage layout: one spelling of every key, shared by client and runtime."""

import pytest

from kinetic_protocol import layout

JOB = "train-20260417-153012-abc1234"


def test_job_keys_are_spelled_as_documented() -> None:
    assert layout.job_prefix(JOB) == f"jobs/{JOB}/"
    assert layout.job_record_key(JOB) == f"jobs/{JOB}/handle.json"
    assert layout.call_key(JOB) == f"jobs/{JOB}/call.json"
    assert layout.payload_key(JOB) == f"jobs/{JOB}/payload.pkl"
    assert layout.result_key(JOB) == f"jobs/{JOB}/result.msgpack"
    assert layout.output_prefix(JOB) == f"outputs/{JOB}/"
    assert layout.bundle_key("ab" * 32) == f"bundles/{'ab' * 32}.zip"


def test_cleaning_a_jobs_prefix_removes_its_artifacts_but_not_its_outputs_or_bundle() -> None:
    prefix = layout.job_prefix(JOB)
    for key in (
        layout.job_record_key(JOB),
        layout.call_key(JOB),
        layout.payload_key(JOB),
        layout.result_key(JOB),
    ):
        assert key.startswith(prefix)
    assert not layout.output_prefix(JOB).startswith(prefix)
    assert not layout.bundle_key("00").startswith(prefix)


def test_a_job_prefix_does_not_match_a_job_whose_id_extends_it() -> None:
    assert not layout.job_record_key(f"{JOB}0").startswith(layout.job_prefix(JOB))


@pytest.mark.parametrize(("index", "attempt"), [(0, 0), (7, 2), (123456, 99)])
def test_child_keys_parse_back_to_index_and_attempt(index: int, attempt: int) -> None:
    key = layout.child_key("grp-1", index, attempt)
    assert key.startswith(layout.children_prefix("grp-1"))
    assert key.startswith(layout.group_prefix("grp-1"))
    assert layout.parse_child_key(key) == (index, attempt)


def test_child_keys_sort_in_index_then_attempt_order() -> None:
    pairs = [(10, 0), (2, 1), (2, 0), (100, 3)]
    keys = sorted(layout.child_key("g", i, a) for i, a in pairs)
    assert [layout.parse_child_key(k) for k in keys] == sorted(pairs)


def test_group_keys_are_distinct_and_do_not_collide_with_children() -> None:
    keys = {
        layout.manifest_key("grp-1"),
        layout.completion_key("grp-1"),
        layout.submission_error_key("grp-1", 0),
        layout.child_key("grp-1", 0, 0),
    }
    assert len(keys) == 4
    assert layout.submission_error_key("grp-1", 3).startswith(
        layout.submission_errors_prefix("grp-1")
    )
    assert not layout.manifest_key("grp-1").startswith(layout.children_prefix("grp-1"))
    assert layout.manifest_key("grp-1") != layout.manifest_key("grp-2")


@pytest.mark.parametrize("digits", ["²", "٣", "\uff11", "0²", "", "+1", " 1"])
def test_key_parsers_take_ascii_digits_only(digits: str) -> None:
    """``str.isdigit`` takes superscripts (which ``int`` refuses) and other scripts' digits
    (which ``int`` reads as another key's number): each parser takes what Kinetic writes."""
    assert layout.ascii_count(digits) is None
    assert layout.parse_lease_key(f"groups/g/lease/{digits}.json") is None
    assert layout.parse_child_key(f"groups/g/children/{digits}-000.json") is None
    assert layout.parse_child_key(f"groups/g/children/000000-{digits}.json") is None
    assert layout.parse_host_key(f"jobs/j/hosts/{digits}/result.msgpack") is None
    assert layout.parse_kept_output_key(f"jobs/j/logs/{digits}/run.json") is None


def test_key_parsers_read_back_what_kinetic_writes() -> None:
    assert layout.parse_lease_key(layout.lease_key("g", 12)) == 12
    assert layout.parse_host_key(layout.host_result_key("j", 3)) == (3, "result.msgpack")
    for run in (0, 7):
        for kind, key in (
            ("result.msgpack", layout.host_result_key("j", 3, run)),
            ("started.json", layout.host_started_key("j", 3, run)),
        ):
            parsed = layout.parse_host_key(key)
            assert parsed is not None and parsed[0] == 3
            assert layout.host_file_run(parsed[1], kind) == run
            other = "started.json" if kind == "result.msgpack" else "result.msgpack"
            assert layout.host_file_run(parsed[1], other) is None
    for odd in ("result-.msgpack", "result-x.msgpack", "result-1.json", "results-1.msgpack"):
        assert layout.host_file_run(odd, "result.msgpack") is None, odd
    assert layout.parse_kept_output_key(layout.kept_output_key("j", 2, "run-1")) == (2, "run-1")
    again = layout.child_rerecord_key("g", 4, 1, "0123456789abcdef")
    assert again.startswith(layout.children_prefix("g"))
    assert layout.parse_child_key(again) == (4, 1)
    assert layout.parse_child_key(again.replace("0123", "XYZ0")) is None
