"""The optional parts of the backend contract, over every installed backend: a capability flag
that promises a method comes with it, and the client finds the extras by protocol."""

from importlib.metadata import entry_points
from pathlib import Path

import pytest

from kinetic_protocol import ENTRY_POINT_GROUP, Capabilities
from kinetic_protocol.optional import BucketStore, contract_problems

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
