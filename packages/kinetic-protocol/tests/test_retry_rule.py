"""The one retry rule (``kinetic_protocol.RetryRule``): which causes are retried, how many
times, and what a preemption spends, as a stored batch declares them."""

import msgspec

from kinetic_protocol import BatchManifest, FailureCause, JobRecord, RetryRule

TEMPLATE = JobRecord(
    job_id="",
    backend="gke",
    project="p",
    cluster_name="c",
    zone="z",
    namespace="default",
    bucket_name="file:///store",
    k8s_name="",
    image_uri="",
    accelerator="cpu",
    func_name="f",
    display_name="f on cpu",
    created_at="2026-01-01T00:00:00+00:00",
    preemption_retries=2,
)


def _manifest(**fields: object) -> BatchManifest:
    return BatchManifest(
        group_id="grp-1",
        func_name="f",
        total_expected=3,
        job_id_prefix="f-1",
        job_template=TEMPLATE,
        created_at="2026-01-01T00:00:00+00:00",
        **fields,  # type: ignore[arg-type]
    )


def test_the_default_rule_retries_nothing_and_leaves_capacity_and_images_alone() -> None:
    rule = RetryRule()
    assert not rule.attempts_left(0)
    assert rule.covers(FailureCause.EXIT) and rule.covers(FailureCause.PREEMPTED)
    assert not rule.covers(FailureCause.UNSCHEDULABLE)
    assert not rule.covers(FailureCause.IMAGE)
    assert not rule.covers(FailureCause.CANCELLED)


def test_a_stored_batch_declares_its_rule_once() -> None:
    rule = _manifest(retries=2, retry_on=["oom", "newer-cause"]).retry_rule
    assert rule == RetryRule(
        retries=2, retry_on=frozenset({FailureCause.OOM}), preemption_retries=2
    )
    assert rule.retries_after(1, FailureCause.OOM)
    assert not rule.retries_after(2, FailureCause.OOM)  # the third attempt is the last
    assert not rule.retries_after(0, FailureCause.EXIT)  # a cause it does not name


def test_a_preemption_spends_the_attempts_own_budget_first() -> None:
    rule = _manifest(retries=1).retry_rule
    assert [rule.preemptions_spent(n) for n in range(4)] == [False, False, False, True]
    # The preemption past them fails the attempt as preempted: retried like any other cause.
    assert rule.retries_after(0, FailureCause.PREEMPTED)


def test_the_rule_survives_the_wire() -> None:
    rule = RetryRule(retries=3, retry_on=frozenset({FailureCause.USER}), preemption_retries=0)
    assert msgspec.json.decode(msgspec.json.encode(rule), type=RetryRule) == rule
