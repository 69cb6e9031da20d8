"""The backend contract over every installed backend: every method the client calls takes the
calls it makes, a capability flag that promises a method comes with it (``array_batches``,
``per_host_logs`` and ``debug_port_forward``), and the client finds the extras by protocol."""

from importlib.metadata import entry_points
from pathlib import Path

import pytest

from kinetic_protocol import ENTRY_POINT_GROUP, Capabilities
from kinetic_protocol.conformance import backend_problems, contract_problems
from kinetic_protocol.optional import BucketStore

BACKENDS = sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda ep: ep.name)


@pytest.mark.parametrize("entry_point", BACKENDS, ids=[ep.name for ep in BACKENDS])
def test_every_installed_backend_keeps_its_optional_contract(entry_point: object) -> None:
    backend = entry_point.load()  # type: ignore[attr-defined]
    assert contract_problems(backend) == []


def test_the_kubernetes_backends_forward_ports_and_share_jobs() -> None:
    names = {ep.name for ep in BACKENDS}
    assert {"local", "gke", "pathways"} <= names
    loaded = {ep.name: ep.load() for ep in BACKENDS}
    assert callable(getattr(loaded["gke"], "port_forward_command", None))
    assert tuple(loaded["gke"].related_backends) == ("pathways",)
    assert tuple(loaded["pathways"].related_backends) == ("gke",)


def test_a_flag_without_its_method_and_a_malformed_attribute_are_named() -> None:
    class Promises:
        capabilities = Capabilities(debug_port_forward=True)
        related_backends = "gke"

    problems = contract_problems(Promises)
    assert problems == [
        "declares debug_port_forward but has no port_forward_command(record, local_port, "
        "remote_port) (PortForwarding)",
        "related_backends must be a sequence of backend names, not 'gke'",
    ]


def test_only_a_bucket_backed_store_is_a_bucket_store(tmp_path: Path) -> None:
    from kinetic_runtime.stores import GCSStore, LocalStore

    assert isinstance(GCSStore("some-bucket", "prefix"), BucketStore)
    assert not isinstance(LocalStore(tmp_path), BucketStore)


@pytest.mark.parametrize("entry_point", BACKENDS, ids=[ep.name for ep in BACKENDS])
def test_every_installed_backend_keeps_the_whole_contract(entry_point: object) -> None:
    backend = entry_point.load()  # type: ignore[attr-defined]
    assert backend_problems(backend) == []


class _Keeps:
    """A backend class that keeps the contract, to be broken one method at a time below."""

    capabilities = Capabilities(array_batches=10, per_host_logs=True)
    declared_settings = ()

    def prepare(self, request): ...
    def signing_keys(self, *, create, refresh=False): ...
    def replace_signing_keys(self, keyring): ...
    def submit(self, record, *, env=None): ...
    def statuses(self, records): ...
    def logs(self, record, *, tail=None, host=None): ...
    def follow_logs(self, record, *, host=None): ...
    def delete(self, record, *, timeout, poll_interval): ...
    def list_job_ids(self): ...
    def submit_array(self, manifest, *, env=None): ...
    def delete_array(self, manifest, *, timeout, poll_interval): ...


def test_a_backend_that_keeps_the_contract_has_no_problem() -> None:
    assert backend_problems(_Keeps) == []


def test_a_method_that_refuses_a_call_of_the_client_is_named() -> None:
    """The architecture page's sample once had ``signing_keys(self, *, create)``: the client's
    ``signing_keys(create=False, refresh=True)`` failed in a user's job with a TypeError."""

    class OldSample(_Keeps):
        def signing_keys(self, *, create): ...  # type: ignore[override]

    assert backend_problems(OldSample) == [
        "signing_keys(*, create) does not take the calls of signing_keys(*, create, "
        "refresh=False) (Backend): got an unexpected keyword argument 'refresh'"
    ]


def test_a_missing_method_is_named_with_the_signature_it_needs() -> None:
    class NoListing(_Keeps):
        list_job_ids = None  # type: ignore[assignment]

    assert backend_problems(NoListing) == ["has no list_job_ids() (Backend)"]


def test_array_batches_promise_both_array_methods_as_the_contract_declares_them() -> None:
    class HalfAnArray(_Keeps):
        delete_array = None  # type: ignore[assignment]

        def submit_array(self, manifest): ...  # type: ignore[override]

    assert contract_problems(HalfAnArray) == [
        "declares array_batches but submit_array(manifest) does not take the calls of "
        "submit_array(manifest, *, env=NO_ENV) (ArrayBackend): got an unexpected keyword "
        "argument 'env'",
        "declares array_batches but has no delete_array(manifest, *, timeout, poll_interval) "
        "(ArrayBackend)",
    ]


def test_per_host_logs_promise_logs_that_take_a_host() -> None:
    class OneHostLogs(_Keeps):
        def logs(self, record, *, tail=None): ...  # type: ignore[override]

    assert contract_problems(OneHostLogs) == [
        "declares per_host_logs but logs(record, *, tail=None) does not take the calls of "
        "logs(record, *, tail=None, host=None) (Backend): got an unexpected keyword argument "
        "'host'"
    ]
    # Without the flag, host= is never passed: the same method keeps the contract.
    OneHostLogs.capabilities = Capabilities(array_batches=10)
    assert backend_problems(OneHostLogs) == []


def test_a_built_backend_is_checked_for_its_store_and_poll_bounds() -> None:
    class Built(_Keeps):
        name = "keeps"
        store_uri = "file:///store"
        poll_bounds = (2.0, 1.0)

    assert backend_problems(Built()) == [
        "poll_bounds must be (shortest, longest) seconds between polls, 0 < shortest <= "
        "longest, not (2.0, 1.0)"
    ]
