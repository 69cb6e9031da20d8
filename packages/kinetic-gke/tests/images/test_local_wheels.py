"""Which installs are unpublished, and the wheels made from them for an image's context."""

import hashlib
import io
import json
import zipfile
from base64 import urlsafe_b64encode
from importlib.metadata import PathDistribution, distribution
from pathlib import Path

import pytest

from kinetic_gke.images.local_wheels import is_published, local_runtime_wheels, wheel_from_installed


def _installed(
    tmp_path: Path, version: str, direct_url: dict[str, object] | None
) -> PathDistribution:
    info = tmp_path / f"demo-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: demo\nVersion: {version}\n")
    if direct_url is not None:
        (info / "direct_url.json").write_text(json.dumps(direct_url))
    return PathDistribution(info)


@pytest.mark.parametrize(
    ("version", "direct_url", "published"),
    [
        ("1.2.0", None, True),  # installed from an index
        ("1.2.0", {"url": "https://files.example/demo-1.2.0.whl", "archive_info": {}}, True),
        ("1.2.0", {"url": "file:///src/demo", "dir_info": {"editable": True}}, False),
        ("1.2.0", {"url": "file:///tmp/demo-1.2.0-py3-none-any.whl", "archive_info": {}}, False),
        ("1.3.0.dev4", None, False),
        ("1.2.0+local", None, False),
    ],
)
def test_published_means_from_an_index_and_a_release_version(
    tmp_path: Path, version: str, direct_url: dict[str, object] | None, published: bool
) -> None:
    assert is_published(_installed(tmp_path, version, direct_url)) is published


def test_the_wheel_holds_the_installed_source_and_is_the_same_bytes_each_time() -> None:
    import kinetic_runtime

    dist = distribution("kinetic-runtime")
    name, data = wheel_from_installed(dist)
    assert name == f"kinetic_runtime-{dist.version}-py3-none-any.whl"
    assert wheel_from_installed(dist) == (name, data)
    with zipfile.ZipFile(io.BytesIO(data)) as wheel:
        main = wheel.read("kinetic_runtime/main.py")
        record = wheel.read(f"kinetic_runtime-{dist.version}.dist-info/RECORD").decode()
        names = wheel.namelist()
    assert main == (Path(kinetic_runtime.__file__).parent / "main.py").read_bytes()
    digest = urlsafe_b64encode(hashlib.sha256(main).digest()).rstrip(b"=").decode()
    assert f"kinetic_runtime/main.py,sha256={digest},{len(main)}" in record
    assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc")]


def test_this_source_checkout_gets_the_runtime_and_protocol_wheels() -> None:
    assert sorted(name.split("-")[0] for name in local_runtime_wheels()) == [
        "kinetic_protocol",
        "kinetic_runtime",
    ]
