"""The client passes the user's ``container_image=`` choice to the backend's ``prepare`` and keeps
the image (and pod-start requirements) it returns; it never resolves or builds an image itself,
so a third-party backend that declares ``container_image`` is never sent to Cloud Build."""

import sys
from pathlib import Path

import pytest

from kinetic.data import Data
from kinetic.options import RunOptions
from kinetic.submission import target as target_module
from kinetic.submission.target import resolve_target
from kinetic_protocol import (
    BackendSettings,
    Capabilities,
    Preparation,
    PrepareRequest,
    parse_accelerator,
)
from kinetic_protocol.signing import Keyring
from kinetic_runtime.keydir import directory_keyring


class ImageBackend:
    """A backend of someone else's whose jobs need an image it resolves its own way."""

    name = "images-elsewhere"
    capabilities = Capabilities(container_image=True, local_data=True)
    declared_settings = ()
    poll_bounds = (0.01, 0.1)

    def __init__(self, store_uri: str, keys: Path) -> None:
        self.store_uri = store_uri
        self.requests: list[PrepareRequest] = []
        self._keys = keys

    def signing_keys(self, *, create: bool, refresh: bool = False) -> Keyring:
        return directory_keyring(self._keys, create=create)

    def prepare(self, request: PrepareRequest) -> Preparation:
        self.requests.append(request)
        return Preparation(image="registry.example/jobs:7", requirements=("numpy==2.1",))


def user_function(x: int) -> int:
    return x


@pytest.fixture
def backend(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ImageBackend:
    for name in ("KINETIC_BACKEND", "KINETIC_PROJECT", "KINETIC_PROFILE", "KINETIC_STORE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("KINETIC_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("KINETIC_PROFILES_FILE", str(tmp_path / "profiles.json"))
    made = ImageBackend((tmp_path / "store").as_uri(), tmp_path / "keys")

    def get_backend(name: str, settings: BackendSettings) -> ImageBackend:
        return made

    monkeypatch.setattr(target_module, "get_backend", get_backend)
    # Any import of Kinetic's own image code from here on fails the test.
    monkeypatch.setitem(sys.modules, "kinetic_gke.images", None)
    return made


def test_the_backends_image_and_requirements_are_what_the_jobs_get(
    backend: ImageBackend,
) -> None:
    options = RunOptions(
        accelerator=parse_accelerator("cpu"),
        container_image="prebuilt",
        base_image_repo="registry.example/base",
        backend="images-elsewhere",
    )
    target = resolve_target(options, user_function, [Data("hf://org/set")])
    assert (target.image_uri, target.requirements) == ("registry.example/jobs:7", ("numpy==2.1",))
    (request,) = backend.requests
    assert request.container_image == "prebuilt"
    assert request.base_image_repo == "registry.example/base"
    assert request.runtime_extras == ("hf",)


def test_no_choice_is_passed_down_as_none_for_the_backends_default(
    backend: ImageBackend,
) -> None:
    options = RunOptions(accelerator=parse_accelerator("cpu"), backend="images-elsewhere")
    resolve_target(options, user_function)
    (request,) = backend.requests
    assert (request.container_image, request.base_image_repo, request.runtime_extras) == (
        None,
        None,
        (),
    )
