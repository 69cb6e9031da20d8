"""A job on several hosts whose pods the cluster refuses to create (real control plane, real
JobSet controller): the refusal the job controller records on the set's Job is the job's
status, and past the unschedulable wait its failure, as for a single Job."""

import pytest
from gke_test_support import HOLD, BackendFactory, Cluster, RecordFactory, wait_for, wait_state

from kinetic_gke.labels import job_selector
from kinetic_gke.manifests import PodOptions
from kinetic_protocol import JobStatus

pytestmark = pytest.mark.realk8s
REFUSED = 'serviceaccount "does-not-exist" not found'


def test_a_group_whose_pods_the_cluster_refuses_says_why_then_fails(
    make_backend: BackendFactory, record: RecordFactory, cluster: Cluster
) -> None:
    backend = make_backend(
        command=HOLD,
        unschedulable_timeout=5.0,
        pod_options=PodOptions(service_account="does-not-exist"),
    )
    job = record("refused-group", nodes=2)
    backend.submit(job)
    pending = wait_for(
        lambda: (
            (s := backend.statuses([job])[job.job_id]).detail.startswith("FailedCreate: ") and s
        ),
        message="the Job's FailedCreate event to show",
    )
    assert pending.status is JobStatus.PENDING
    assert REFUSED in pending.detail, pending.detail
    failed = wait_state(backend, job, JobStatus.FAILED)
    assert failed.detail.startswith("FailedCreate: ") and REFUSED in failed.detail, failed.detail
    assert cluster.pods(job_selector(job.job_id)) == []
