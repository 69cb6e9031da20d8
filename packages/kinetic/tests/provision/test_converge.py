"""A failure at any step of `kinetic up` or `kinetic pool add`, then the same command again:
it converges, every resource exists once, and a third run changes nothing.

Failures are injected where they happen for real: an API call refused, a call carried out whose
answer is lost, a long-running operation that ends in an error (GKE then leaves the cluster or
pool in ERROR), in the Google Cloud fake, in front of fake-gcs-server and in front of the real
API server. The LeaderWorkerSet install step is in test_lws.py (it needs a cluster without it).
"""

import os
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
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
    inject: Callable[[Env], Any]
    creates: dict[str, int] = field(default_factory=dict)
    """Create (and delete) calls carried out, where not one each: a failed operation's create
    is made again, and a broken cluster or pool is deleted first."""


def _fail(route: str, **how: Any) -> Callable[[Env], Any]:
    return lambda env: env.cloud.fail(route, code=how.pop("code", 500), **how)


def _kube(path: str, *, after: bool = False) -> Callable[[Env], Any]:
    return lambda env: env.kube.inject(
        ApiFault(method="POST", path_contains=path, code=403, after=after)
    )


def _gcs(*, after: bool) -> Callable[[Env], Any]:
    fault = ApiFault(method="POST", path_contains="/storage/v1/b", code=403, after=after)
    return lambda env: env.gcs.inject(fault)


UP_FAILURES = [
    Failure("apis-refused", _fail("serviceusage.enable", code=403)),
    Failure("apis-operation-failed",
            lambda env: env.cloud.apis.fail_operation("serviceusage.enable"),
            {"serviceusage.enable": 2}),
    Failure("nodes-account-refused", _fail("iam.serviceAccounts.create", code=403)),
    Failure("build-account-refused", _fail("iam.serviceAccounts.create", code=403, skip=1)),
    Failure("jobs-account-refused", _fail("iam.serviceAccounts.create", code=403, skip=2)),
    Failure("account-answer-lost", _fail("iam.serviceAccounts.create", skip=1, after=True)),
    Failure("project-roles-refused", _fail("resourcemanager.setIam", code=403)),
    Failure("project-roles-answer-lost", _fail("resourcemanager.setIam", after=True)),
    Failure("cluster-refused", _fail("container.clusters.create", code=403)),
    Failure("cluster-answer-lost", _fail("container.clusters.create", after=True)),
    Failure("cluster-operation-failed",
            lambda env: env.cloud.container.fail_operation("CREATE_CLUSTER"),
            {"container.clusters.create": 2, "container.clusters.delete": 1}),
    Failure("bucket-refused", _gcs(after=False)),
    Failure("bucket-answer-lost", _gcs(after=True)),
    Failure("registry-refused", _fail("artifactregistry.create", code=403)),
    Failure("registry-answer-lost", _fail("artifactregistry.create", after=True)),
    Failure("registry-operation-failed",
            lambda env: env.cloud.apis.fail_operation("artifactregistry.create"),
            {"artifactregistry.create": 2}),
    Failure("workload-identity-refused", _fail("iam.serviceAccounts.setIam", code=403)),
    Failure("workload-identity-answer-lost", _fail("iam.serviceAccounts.setIam", after=True)),
    Failure("namespace-refused", _kube("/api/v1/namespaces")),
    Failure("namespace-answer-lost", _kube("/api/v1/namespaces", after=True)),
    Failure("kubernetes-service-account-refused", _kube("/serviceaccounts")),
]  # fmt: skip
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


def _converges(kinetic: Invoke, env: Env, *command: str) -> None:
    """The command fails, succeeds when run again, then finds nothing to do."""
    failed = kinetic(*command)
    assert failed.exit_code == 1, failed.output
    assert "Error:" in failed.output
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


@pytest.mark.parametrize("failure", UP_FAILURES, ids=[f.name for f in UP_FAILURES])
def test_up_converges_after_a_failure_at_any_step_with_no_duplicate(
    env: Env, kinetic: Invoke, real_k8s: ControlPlane, cluster_name: str, failure: Failure
) -> None:
    failure.inject(env)
    _converges(kinetic, env, "up")
    for route, once in CREATES.items():
        assert env.cloud.carried_out(route) == failure.creates.get(route, once), route
    _assert_once(env, real_k8s, cluster_name)
    from google.cloud import storage

    assert storage.Client().lookup_bucket(f"{PROJECT}-kinetic-{cluster_name}") is not None


POOL_FAILURES = [
    Failure("pool-refused", _fail("container.nodePools.create", code=403)),
    Failure("pool-answer-lost", _fail("container.nodePools.create", after=True)),
    Failure("pool-operation-failed",
            lambda env: env.cloud.container.fail_operation("CREATE_NODE_POOL"),
            {"container.nodePools.create": 2, "container.nodePools.delete": 1}),
]  # fmt: skip


@pytest.mark.parametrize("failure", POOL_FAILURES, ids=[f.name for f in POOL_FAILURES])
def test_pool_add_converges_after_a_failure_with_no_duplicate(
    env: Env, kinetic: Invoke, cluster_name: str, failure: Failure
) -> None:
    ok(kinetic("up"))
    failure.inject(env)
    _converges(kinetic, env, "pool", "add", "--accelerator", "gpu-l4")
    for route, once in (("container.nodePools.create", 1), ("container.nodePools.delete", 0)):
        assert env.cloud.carried_out(route) == failure.creates.get(route, once), route
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
