"""`kinetic up` and `kinetic pool add` walked through their steps, a failure at each in turn:
every run gets past all that the runs before it did, without making anything again, and stops
at the next failure; a run with nothing failing then finishes, one more finds nothing to do,
and every resource was made exactly once (or, where an operation failed, as often as that
takes).

Failures are injected where they happen for real: an API call refused, a call carried out whose
answer is lost, a long-running operation that ends in an error (GKE then leaves the cluster or
pool in ERROR), in the Google Cloud fake, in front of fake-gcs-server and in front of the real
API server. Refusals walk every step of `up`; lost answers and failed operations walk each kind
of resource. The LeaderWorkerSet and Kueue install steps are in test_installs.py (they need a
cluster without them).
"""

import os
import re
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from provision_support import PROJECT, ZONE, Invoke, mutations, ok

from kinetic_testing.controlplane.cluster import ControlPlane
from kinetic_testing.controlplane.proxy import ApiFault, ApiProxy
from kinetic_testing.fake_gcs import FakeGcsServer
from kinetic_testing.gcp_fake import FakeGoogleCloud

pytestmark = [pytest.mark.realk8s, pytest.mark.gcs]


@dataclass
class Env:
    cloud: FakeGoogleCloud
    kube: ApiProxy
    """The cluster's endpoint (the real API server behind a fault-injecting proxy)."""
    gcs: ApiProxy
    """fake-gcs-server, behind a fault-injecting proxy."""


@dataclass(frozen=True)
class Failure:
    name: str
    inject: Callable[[Env], ApiFault | None]
    """Arms the failure; returns the proxy's fault, if it is one (to see that it was met)."""
    step: str
    """The step the run must stop at: text of its ``[i/n]`` line (``{cluster}`` filled in)."""


def _fail(route: str, **how: Any) -> Callable[[Env], None]:
    return lambda env: env.cloud.fail(route, **how)


def _kube(path: str, *, after: bool = False) -> Callable[[Env], ApiFault]:
    return lambda env: env.kube.inject(
        ApiFault(method="POST", path_contains=path, code=403, after=after)
    )


def _gcs(*, after: bool) -> Callable[[Env], ApiFault]:
    return lambda env: env.gcs.inject(
        ApiFault(method="POST", path_contains="/storage/v1/b", code=403, after=after)
    )


_APIS = "enable 7 APIs"
_ACCOUNT = "create service account kn-{cluster}-"
_ROLES = " project roles"
_CLUSTER = "create cluster {cluster} "
_BUCKET = "create bucket gs://"
_REGISTRY = "create Artifact Registry repository"
_WORKLOAD_IDENTITY = "grant Workload Identity"
_NAMESPACE = "create namespace"
_KSA = "create Kubernetes service account"

UP_REFUSED = [
    Failure("apis-refused", _fail("serviceusage.enable", code=403), _APIS),
    Failure("nodes-account-refused", _fail("iam.serviceAccounts.create", code=403),
            _ACCOUNT + "nodes@"),
    # The account refused one run earlier is made first, so the fault lets one call through.
    Failure("build-account-refused", _fail("iam.serviceAccounts.create", code=403, skip=1),
            _ACCOUNT + "build@"),
    Failure("jobs-account-refused", _fail("iam.serviceAccounts.create", code=403, skip=1),
            _ACCOUNT + "jobs@"),
    Failure("project-roles-refused", _fail("resourcemanager.setIam", code=403), _ROLES),
    Failure("cluster-refused", _fail("container.clusters.create", code=403), _CLUSTER),
    Failure("bucket-refused", _gcs(after=False), _BUCKET),
    Failure("registry-refused", _fail("artifactregistry.create", code=403), _REGISTRY),
    Failure("workload-identity-refused", _fail("iam.serviceAccounts.setIam", code=403),
            _WORKLOAD_IDENTITY),
    Failure("namespace-refused", _kube("/api/v1/namespaces"), _NAMESPACE),
    Failure("kubernetes-service-account-refused", _kube("/serviceaccounts"), _KSA),
]  # fmt: skip
"""A refusal at every step of `up`, in the order the steps run."""


def _operation_fails(which: str, route: str) -> Callable[[Env], None]:
    def inject(env: Env) -> None:
        fake = env.cloud.container if which == "container" else env.cloud.apis
        fake.fail_operation(route)

    return inject


UP_LOST_OR_FAILED = [
    Failure("apis-operation-failed", _operation_fails("apis", "serviceusage.enable"), _APIS),
    Failure("apis-answer-lost", _fail("serviceusage.enable", after=True), _APIS),
    Failure("account-answer-lost", _fail("iam.serviceAccounts.create", after=True),
            _ACCOUNT + "nodes@"),
    Failure("project-roles-answer-lost", _fail("resourcemanager.setIam", after=True), _ROLES),
    Failure("cluster-operation-failed", _operation_fails("container", "CREATE_CLUSTER"),
            _CLUSTER),
    # The cluster left in ERROR is deleted, then made again: that answer is lost.
    Failure("cluster-answer-lost", _fail("container.clusters.create", after=True), _CLUSTER),
    Failure("bucket-answer-lost", _gcs(after=True), _BUCKET),
    Failure("registry-operation-failed",
            _operation_fails("apis", "artifactregistry.create"), _REGISTRY),
    Failure("registry-answer-lost", _fail("artifactregistry.create", after=True), _REGISTRY),
    Failure("workload-identity-answer-lost", _fail("iam.serviceAccounts.setIam", after=True),
            _WORKLOAD_IDENTITY),
    Failure("namespace-answer-lost", _kube("/api/v1/namespaces", after=True), _NAMESPACE),
]  # fmt: skip
"""For each kind of resource, its lost answer and (where it has one) its failed operation."""

CREATES = {
    "serviceusage.enable": 1, "iam.serviceAccounts.create": 3, "container.clusters.create": 1,
    "artifactregistry.create": 1, "container.clusters.delete": 0,
}  # fmt: skip
"""Calls carried out by a run that nothing disturbs."""


@pytest.fixture
def env(
    up_env: FakeGoogleCloud,
    cluster_api: ApiProxy,
    fake_gcs: FakeGcsServer,
    real_k8s: ControlPlane,
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[Env]:
    """The usual set-up, with fake-gcs-server behind a proxy, and a namespace that does not
    exist yet (so creating it is a step too)."""
    up_env.apis.polls_until_done = up_env.container.polls_until_done = 1
    namespace = f"converge-{uuid.uuid4().hex[:8]}"
    monkeypatch.setenv("KINETIC_NAMESPACE", namespace)
    with ApiProxy(upstream=fake_gcs.endpoint) as gcs:
        monkeypatch.setenv("STORAGE_EMULATOR_HOST", gcs.url)
        yield Env(up_env, cluster_api, gcs)
    real_k8s.delete_namespace(namespace)


def _unmet(env: Env, proxied: ApiFault | None) -> list[object]:
    """The armed failures no call has met yet."""
    cloud = env.cloud
    unmet: list[object] = [*cloud.faults, *cloud.container.failing, *cloud.apis.failing]
    return [*unmet, proxied] if proxied is not None and proxied.hits != 1 else unmet


def _walk(kinetic: Invoke, env: Env, cluster: str, failures: list[Failure], *command: str) -> None:
    """Each failure armed in turn, the command run: it stops at that failure's step, having got
    past every earlier one; then it succeeds, and once more finds nothing to do."""
    for failure in failures:
        proxied = failure.inject(env)
        failed = kinetic(*command)
        assert failed.exit_code == 1, (failure.name, failed.output)
        assert "Error:" in failed.output, failure.name
        steps = re.findall(r"^\[\d+/\d+\] (.*)$", failed.output, re.MULTILINE)
        assert steps, (failure.name, failed.output)
        assert failure.step.format(cluster=cluster) in steps[-1], (failure.name, failed.output)
        assert _unmet(env, proxied) == [], failure.name
    ok(kinetic(*command))
    before = len(env.cloud.calls)
    assert "Nothing to do: everything is in place." in ok(kinetic(*command))
    assert mutations(env.cloud.calls[before:]) == []


def _assert_once(env: Env, real_k8s: ControlPlane, cluster: str) -> None:
    assert [name.rsplit("/", 1)[-1] for name in env.cloud.container.clusters] == [cluster]
    assert len(env.cloud.apis.service_accounts) == 3
    assert len(env.cloud.apis.repositories) == 1
    policies = [*env.cloud.apis.project_policies.values(), *env.cloud.apis.sa_policies.values()]
    for binding in (b for policy in policies for b in policy["bindings"]):
        assert len(binding["members"]) == len(set(binding["members"])), binding
    keys = [(b["role"], str(b.get("condition"))) for p in policies for b in p["bindings"]]
    assert len(keys) == len(set(keys)), "a role granted in two bindings"
    namespace = os.environ["KINETIC_NAMESPACE"]
    ksa = real_k8s.request("GET", f"/api/v1/namespaces/{namespace}/serviceaccounts/default")
    assert ksa["metadata"]["annotations"]["iam.gke.io/gcp-service-account"].endswith(
        f"-jobs@{PROJECT}.iam.gserviceaccount.com"
    )
    from google.cloud import storage

    assert storage.Client().lookup_bucket(f"{PROJECT}-kinetic-{cluster}") is not None


def test_up_refused_at_each_step_in_turn_converges_making_everything_once(
    env: Env, kinetic: Invoke, real_k8s: ControlPlane, cluster_name: str
) -> None:
    _walk(kinetic, env, cluster_name, UP_REFUSED, "up")
    for route, once in CREATES.items():
        assert env.cloud.carried_out(route) == once, route
    _assert_once(env, real_k8s, cluster_name)


def test_up_after_lost_answers_and_failed_operations_of_each_kind_makes_nothing_twice(
    env: Env, kinetic: Invoke, real_k8s: ControlPlane, cluster_name: str
) -> None:
    """A lost answer's resource is found, not made again; a failed operation's is made again
    (the APIs enabled twice, the registry created twice), and a cluster left in ERROR is
    deleted and created again."""
    _walk(kinetic, env, cluster_name, UP_LOST_OR_FAILED, "up")
    made = {**CREATES, "serviceusage.enable": 2, "container.clusters.create": 2,
            "container.clusters.delete": 1, "artifactregistry.create": 2}  # fmt: skip
    for route, times in made.items():
        assert env.cloud.carried_out(route) == times, route
    _assert_once(env, real_k8s, cluster_name)


POOL_FAILURES = [
    Failure("pool-refused", _fail("container.nodePools.create", code=403),
            "create node pool kinetic-gpu-l4"),
    Failure("pool-operation-failed", _operation_fails("container", "CREATE_NODE_POOL"),
            "create node pool kinetic-gpu-l4"),
    # The pool left in ERROR is deleted, then made again: that answer is lost.
    Failure("pool-answer-lost", _fail("container.nodePools.create", after=True),
            "create node pool kinetic-gpu-l4"),
]  # fmt: skip


def test_pool_add_after_a_refusal_a_failed_operation_and_a_lost_answer_makes_the_pool_once(
    env: Env, kinetic: Invoke, cluster_name: str
) -> None:
    """The pool GKE left in ERROR is deleted and made again; the one whose answer was lost is
    found and kept."""
    ok(kinetic("up"))
    _walk(kinetic, env, cluster_name, POOL_FAILURES, "pool", "add", "--accelerator", "gpu-l4")
    for route, times in (("container.nodePools.create", 2), ("container.nodePools.delete", 1)):
        assert env.cloud.carried_out(route) == times, route
    found = env.cloud.container.cluster(PROJECT, ZONE, cluster_name)
    assert found is not None
    pools = [pool["name"] for pool in found["nodePools"]]
    assert sorted(pools) == ["kinetic-default", "kinetic-gpu-l4"]
    assert {pool["status"] for pool in found["nodePools"]} == {"RUNNING"}


def test_a_plan_made_while_an_api_was_off_keeps_what_it_then_finds(
    env: Env, kinetic: Invoke
) -> None:
    """Service accounts exist while the IAM API is off (turned off after an earlier `up`): the
    plan cannot see them and creates them; each create finds its account and keeps it."""
    ok(kinetic("up"))
    env.cloud.apis.enabled[PROJECT].discard("iam.googleapis.com")
    planned = ok(kinetic("up"))
    assert planned.count("+ create service account") == 3
    assert env.cloud.count("iam.serviceAccounts.create") == 6
    assert env.cloud.carried_out("iam.serviceAccounts.create") == 3
    assert len(env.cloud.apis.service_accounts) == 3
    assert "Nothing to do: everything is in place." in ok(kinetic("up"))
