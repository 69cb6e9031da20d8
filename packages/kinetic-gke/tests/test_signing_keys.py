"""A namespace's signing keys in its Secret, against the real API server: made once, shared by
every client, rotated without losing old keys, and a clear error for a caller who may not
read them."""

import pytest
from gke_test_support import make_record

from kinetic_gke.backend import GKEBackend
from kinetic_gke.k8s import ClusterConnection
from kinetic_gke.k8s.signing import MOUNT_PATH, SECRET_NAME, namespace_keyring
from kinetic_gke.manifests import job_manifest
from kinetic_protocol import SigningKeyError
from kinetic_testing.controlplane.cluster import ApiError, ControlPlane

pytestmark = pytest.mark.realk8s


def _connection(real_k8s: ControlPlane, namespace: str, token: str) -> ClusterConnection:
    return ClusterConnection.from_endpoint(
        server=real_k8s.server,
        ca_certificate=real_k8s.pki.ca_cert.read_bytes(),
        token=lambda: token,
        namespace=namespace,
    )


def _token_without_secrets(real_k8s: ControlPlane, namespace: str) -> str:
    """A token for a service account that may read jobs and pods in ``namespace``, not
    secrets: a teammate with a narrower role."""
    name = f"reader-{namespace}"[:63]
    rbac = f"/apis/rbac.authorization.k8s.io/v1/namespaces/{namespace}"
    role = {
        "metadata": {"name": name},
        "rules": [
            {"apiGroups": ["", "batch"], "resources": ["pods", "jobs"], "verbs": ["get", "list"]}
        ],
    }
    binding = {
        "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
        "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": namespace}],
    }
    for path, body in (
        (f"/api/v1/namespaces/{namespace}/serviceaccounts", {"metadata": {"name": name}}),
        (f"{rbac}/roles", role),
        (f"{rbac}/rolebindings", binding),
    ):
        try:
            real_k8s.request("POST", path, body)
        except ApiError as error:
            if error.code != 409:
                raise
    issued = real_k8s.request(
        "POST",
        f"/api/v1/namespaces/{namespace}/serviceaccounts/{name}/token",
        {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}},
    )
    return str(issued["status"]["token"])


def test_the_first_submitter_makes_the_keyring_and_every_client_then_shares_it(
    real_k8s: ControlPlane, k8s_namespace: str
) -> None:
    admin = real_k8s.bearer_token()
    first = _connection(real_k8s, k8s_namespace, admin)
    with pytest.raises(SigningKeyError, match=f"{SECRET_NAME} in namespace {k8s_namespace}"):
        namespace_keyring(first, create=False)  # a reader never makes one
    made = namespace_keyring(first, create=True)
    again = namespace_keyring(_connection(real_k8s, k8s_namespace, admin), create=True)
    assert again.entries() == made.entries()
    secret = real_k8s.request("GET", f"/api/v1/namespaces/{k8s_namespace}/secrets/{SECRET_NAME}")
    assert set(secret["data"]) == {made.current, "current"}


def test_a_rotation_adds_a_key_and_keeps_the_old_one(
    make_backend: object, real_k8s: ControlPlane, k8s_namespace: str
) -> None:
    backend: GKEBackend = make_backend()  # type: ignore[operator]
    original = backend.signing_keys(create=True)
    backend.replace_signing_keys(original.rotated())
    fresh = namespace_keyring(
        _connection(real_k8s, k8s_namespace, real_k8s.bearer_token()), create=False
    )
    assert fresh.current != original.current
    assert set(fresh.key_ids) == {original.current, fresh.current}
    signature = original.sign("result", "job-1", b"body")
    fresh.check(signature, "result", "job-1", b"body", key="k")  # old results still verify


def test_a_caller_who_may_not_read_secrets_gets_a_clear_error(
    real_k8s: ControlPlane, k8s_namespace: str
) -> None:
    namespace_keyring(_connection(real_k8s, k8s_namespace, real_k8s.bearer_token()), create=True)
    narrow = _connection(real_k8s, k8s_namespace, _token_without_secrets(real_k8s, k8s_namespace))
    with pytest.raises(SigningKeyError) as caught:
        namespace_keyring(narrow, create=False)
    message = str(caught.value)
    assert f"Cannot get Secret {SECRET_NAME} in namespace {k8s_namespace}" in message
    assert "'get' and 'create' on secrets" in message


def test_every_pod_mounts_the_keys_read_only_where_the_runtime_looks() -> None:
    manifest = job_manifest(make_record())
    pod = manifest["spec"]["template"]["spec"]
    container = pod["containers"][0]
    volume = next(v for v in pod["volumes"] if v.get("secret"))
    assert volume["secret"]["secretName"] == SECRET_NAME
    mount = next(m for m in container["volumeMounts"] if m["name"] == volume["name"])
    assert (mount["mountPath"], mount["readOnly"]) == (MOUNT_PATH, True)
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert env["KINETIC_SIGNING_KEYS"] == MOUNT_PATH
    assert pod["securityContext"]["fsGroup"] == pod["securityContext"]["runAsGroup"]
