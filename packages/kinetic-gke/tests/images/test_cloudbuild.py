"""ImageBuilder with the real google-cloud-build client against the in-process fake."""

import base64
import gzip
import hashlib
import io
import os
import subprocess
import tarfile
from pathlib import Path
from typing import Any

import pytest

from kinetic_gke.images import (
    ImageBuilder,
    ImageBuildError,
    RegistryClient,
    build_base_images,
    build_context,
)
from kinetic_gke.images.cloudbuild import INLINE_CHUNK
from kinetic_gke.images.local_wheels import local_runtime_wheels
from kinetic_protocol.errors import BackendError, ConfigError
from kinetic_protocol.requirements import Requirements
from kinetic_testing.cloudbuild_fake import BuildOutcome, FakeCloudBuild

URI = "us-central1-docker.pkg.dev/proj/kinetic/cpu:0123456789abcdef"


def _ctx(*lines: str) -> Any:
    return build_context(
        Requirements(lines=lines, source=""), category="cpu", kinetic_version="1.0"
    )


def _untar(data: bytes) -> dict[str, bytes]:
    with tarfile.open(fileobj=io.BytesIO(gzip.decompress(data))) as tar:
        return {m.name: tar.extractfile(m).read() for m in tar.getmembers()}  # type: ignore[union-attr]


def test_a_successful_build_pushes_the_image_and_sends_the_context_inline(
    builder: ImageBuilder, fake_cloudbuild: FakeCloudBuild
) -> None:
    ctx = _ctx("numpy==1.26.4")
    assert builder.build(ctx, URI) == URI
    assert fake_cloudbuild.has_image(URI)
    [request] = fake_cloudbuild.create_requests
    assert request["images"] == [URI]
    assert f"kinetic-{ctx.content_hash[:16]}" in request["tags"]
    unpack, docker = request["steps"]
    assert docker["args"] == ["build", "--tag", URI, "--file", "Dockerfile", "."]
    [env] = unpack["env"]
    name, _, encoded = env.partition("=")
    assert name == "KINETIC_BUILD_CONTEXT"
    assert _untar(base64.b64decode(encoded)) == ctx.files
    assert "$$KINETIC_BUILD_CONTEXT" in unpack["args"][1]  # escaped from substitution
    assert request["timeout"] == "60s"  # the builder in conftest waits 30 s at most


def test_the_build_runs_in_the_builders_region(
    builder: ImageBuilder, fake_cloudbuild: FakeCloudBuild, cloudbuild_client: Any
) -> None:
    builder.build(_ctx(), URI)
    [build] = cloudbuild_client.list_builds(
        request={"parent": "projects/proj/locations/us-central1"}
    )
    assert build.name.startswith("projects/proj/locations/us-central1/builds/")
    assert build.status.name == "SUCCESS"
    assert cloudbuild_client.get_build(request={"name": build.name}).results.images[0].name == URI


def test_list_filters_by_tag_and_pages(builder: ImageBuilder, cloudbuild_client: Any) -> None:
    first, second = _ctx("a"), _ctx("b")
    builder.build(first, URI)
    builder.build(second, URI.replace("cpu:", "cpu:f"))
    parent = "projects/proj/locations/us-central1"
    tagged = list(
        cloudbuild_client.list_builds(
            request={"parent": parent, "filter": f'tags="kinetic-{second.content_hash[:16]}"'}
        )
    )
    assert [b.images for b in tagged] == [[URI.replace("cpu:", "cpu:f")]]
    pages = cloudbuild_client.list_builds(request={"parent": parent, "page_size": 1}).pages
    assert [len(p.builds) for p in pages] == [1, 1]


def test_an_existing_tag_skips_the_build(
    builder: ImageBuilder, fake_cloudbuild: FakeCloudBuild
) -> None:
    fake_cloudbuild.add_image(URI)
    assert builder.ensure(_ctx(), URI) == URI
    assert fake_cloudbuild.create_calls == 0
    assert fake_cloudbuild.manifest_requests == 1


def test_a_built_image_is_reused_by_the_next_ensure(
    builder: ImageBuilder, fake_cloudbuild: FakeCloudBuild
) -> None:
    builder.ensure(_ctx(), URI)
    builder.ensure(_ctx(), URI)
    assert fake_cloudbuild.create_calls == 1


@pytest.mark.parametrize("status", ["FAILURE", "INTERNAL_ERROR", "TIMEOUT"])
def test_a_failed_build_raises_with_id_status_and_log_tail(
    builder: ImageBuilder, fake_cloudbuild: FakeCloudBuild, status: Any
) -> None:
    fake_cloudbuild.script(
        BuildOutcome(
            status=status,
            log="ERROR: No matching distribution found for nonexistent-pkg==9\n",
            failure_detail="Build step failure: docker build exited 1",
        )
    )
    with pytest.raises(ImageBuildError) as info:
        builder.build(_ctx("nonexistent-pkg==9"), URI)
    err = info.value
    assert isinstance(err, BackendError)
    [build_id] = list(fake_cloudbuild.state.builds)
    assert err.build_id == build_id
    assert err.status == status
    assert "No matching distribution found for nonexistent-pkg==9" in err.log_tail
    for part in (build_id, status, "nonexistent-pkg==9", err.log_url, "docker build exited 1"):
        assert part in str(err)
    assert err.log_url.startswith("https://console.cloud.google.com/cloud-build/builds")
    assert not fake_cloudbuild.has_image(URI)


def test_only_the_last_lines_of_a_long_log_are_kept(
    fake_cloudbuild: FakeCloudBuild, cloudbuild_client: Any
) -> None:
    fake_cloudbuild.script(
        BuildOutcome(status="FAILURE", log="".join(f"line {i:03d}\n" for i in range(200)))
    )
    short = ImageBuilder(
        project="proj",
        location="us-central1",
        client=cloudbuild_client,
        registry=RegistryClient(endpoint=fake_cloudbuild.url, token=lambda: None),
        log_fetcher=fake_cloudbuild.read_log,
        poll_interval=(0.01, 0.05),
        log_tail_lines=5,
    )
    with pytest.raises(ImageBuildError) as info:
        short.build(_ctx(), URI)
    assert info.value.log_tail.split() == [w for i in range(195, 200) for w in ("line", f"{i:03d}")]


def test_an_unreadable_log_still_reports_the_failure(
    fake_cloudbuild: FakeCloudBuild, cloudbuild_client: Any
) -> None:
    def broken(bucket: str, build_id: str) -> str:
        raise PermissionError("storage.objects.get denied")

    fake_cloudbuild.script(BuildOutcome(status="FAILURE"))
    no_logs = ImageBuilder(
        project="proj",
        location="us-central1",
        client=cloudbuild_client,
        log_fetcher=broken,
        poll_interval=(0.01, 0.05),
    )
    with pytest.raises(ImageBuildError, match="FAILURE") as info:
        no_logs.build(_ctx(), URI)
    assert "could not read the build log" in info.value.log_tail
    assert "storage.objects.get denied" in str(info.value)


def test_permission_denied_is_a_clear_error(
    builder: ImageBuilder, fake_cloudbuild: FakeCloudBuild
) -> None:
    fake_cloudbuild.fail_next_request(
        code=403,
        status="PERMISSION_DENIED",
        message="The caller does not have permission",
    )
    with pytest.raises(ImageBuildError) as info:
        builder.build(_ctx(), URI)
    text = str(info.value)
    assert "project 'proj', location 'us-central1'" in text
    assert "does not have permission" in text
    assert "roles/cloudbuild.builds.editor" in text
    assert fake_cloudbuild.create_calls == 0


def test_an_error_while_polling_is_reported(
    builder: ImageBuilder, fake_cloudbuild: FakeCloudBuild
) -> None:
    fake_cloudbuild.fail_next_request(
        code=404, status="NOT_FOUND", message="Project proj not found", skip=1
    )
    with pytest.raises(ImageBuildError, match="Project proj not found") as info:
        builder.build(_ctx(), URI)
    assert fake_cloudbuild.create_calls == 1
    assert "Check the project and zone" in str(info.value)


def test_a_build_that_outlives_the_timeout_is_cancelled(cloudbuild_client: Any) -> None:
    with FakeCloudBuild(polls_until_done=10**9) as slow:
        from google.api_core.client_options import ClientOptions
        from google.auth.credentials import AnonymousCredentials
        from google.cloud.devtools.cloudbuild_v1 import CloudBuildClient

        client = CloudBuildClient(
            transport="rest",
            client_options=ClientOptions(api_endpoint=slow.url),
            credentials=AnonymousCredentials(),  # type: ignore[no-untyped-call]
        )
        impatient = ImageBuilder(
            project="proj",
            location="us-central1",
            client=client,
            log_fetcher=slow.read_log,
            timeout=0.3,
            poll_interval=(0.01, 0.02),
        )
        with pytest.raises(ImageBuildError) as info:
            impatient.build(_ctx(), URI)
        assert info.value.status == "TIMEOUT"
        assert "was cancelled" in str(info.value)
        [build] = slow.state.builds.values()
        assert build["status"] == "CANCELLED"


def test_an_uploaded_context_replaces_the_inline_step(
    builder: ImageBuilder, fake_cloudbuild: FakeCloudBuild, cloudbuild_client: Any
) -> None:
    uploads: list[tuple[bytes, str]] = []

    def upload(data: bytes, name: str) -> tuple[str, str]:
        uploads.append((data, name))
        return "my-bucket", name

    ctx = _ctx("numpy")
    uploading = ImageBuilder(
        project="proj",
        location="us-central1",
        client=cloudbuild_client,
        source_uploader=upload,
        poll_interval=(0.01, 0.05),
    )
    uploading.build(ctx, URI)
    [(data, name)] = uploads
    assert _untar(data) == ctx.files
    [request] = fake_cloudbuild.create_requests
    assert request["source"] == {"storageSource": {"bucket": "my-bucket", "object": name}}
    assert [s["id"] for s in request["steps"]] == ["docker-build"]


def test_an_oversized_context_asks_for_another_route(builder: ImageBuilder) -> None:
    digests = (hashlib.sha256(str(i).encode()).hexdigest() for i in range(10000))
    huge = tuple(f"package-{i}==1.0 --hash=sha256:{d}" for i, d in enumerate(digests))
    with pytest.raises(ConfigError, match="prebuilt"):
        builder.build(_ctx(*huge), URI)


def test_registry_permission_problems_are_explained(
    builder: ImageBuilder, fake_cloudbuild: FakeCloudBuild
) -> None:
    fake_cloudbuild.fail_next_registry_check(403)
    with pytest.raises(BackendError, match=r"HTTP 403.*artifactregistry.reader"):
        builder.ensure(_ctx(), URI)
    assert fake_cloudbuild.create_calls == 0


def test_an_unreachable_registry_is_a_backend_error() -> None:
    with FakeCloudBuild() as gone:
        endpoint = gone.url
    registry = RegistryClient(endpoint=endpoint, token=lambda: None, timeout=5)
    with pytest.raises(BackendError, match="Cannot reach the registry"):
        registry.exists(URI)


def test_build_base_images_publishes_one_image_per_category(
    builder: ImageBuilder, fake_cloudbuild: FakeCloudBuild, tmp_path: Path
) -> None:
    uris = build_base_images(["cpu", "gpu"], "us-docker.pkg.dev/proj/base", "3.12", builder)
    from kinetic_gke.images import kinetic_version

    version = kinetic_version()
    assert uris == [
        f"us-docker.pkg.dev/proj/base/kinetic-cpu:{version}-py312",
        f"us-docker.pkg.dev/proj/base/kinetic-gpu:{version}-py312",
    ]
    assert all(fake_cloudbuild.has_image(u) for u in uris)
    wheels = local_runtime_wheels()  # this workspace's runtime is a source checkout
    assert wheels
    for request in fake_cloudbuild.create_requests:
        files = _unpack_step(request["steps"][0], tmp_path / request["images"][0])
        assert set(files) == {"Dockerfile", *(f"wheels/{name}" for name in wheels)}
        runtime = next(name for name in wheels if name.startswith("kinetic_runtime-"))
        assert (
            f"'kinetic-runtime[gcs,debug] @ file:///opt/kinetic/wheels/{runtime}'"
            in files["Dockerfile"].decode()
        )


def _unpack_step(step: dict[str, Any], where: Path) -> dict[str, bytes]:
    """Run the unpack step's script with bash in ``where``, as Cloud Build would (``$$`` is
    its escape for ``$``), and read back what it unpacked."""
    where.mkdir(parents=True)
    env = dict(item.partition("=")[::2] for item in step["env"])
    script = step["args"][1].replace("$$", "$")
    subprocess.run(["bash", "-c", script], cwd=where, env={**os.environ, **env}, check=True)
    return {
        path.relative_to(where).as_posix(): path.read_bytes()
        for path in where.rglob("*")
        if path.is_file()
    }


def test_a_context_larger_than_one_variable_travels_in_pieces(
    builder: ImageBuilder, fake_cloudbuild: FakeCloudBuild, tmp_path: Path
) -> None:
    ctx = build_context(
        Requirements(lines=(), source=""),
        category="cpu",
        kinetic_version="1.0",
        runtime_wheels={"kinetic_runtime-1.0-py3-none-any.whl": os.urandom(INLINE_CHUNK)},
    )
    builder.build(ctx, URI)
    [request] = fake_cloudbuild.create_requests
    unpack = request["steps"][0]
    assert len(unpack["env"]) == 2
    assert _unpack_step(unpack, tmp_path / "unpacked") == ctx.files


def test_build_base_images_rejects_unknown_categories(builder: ImageBuilder) -> None:
    with pytest.raises(ConfigError, match="'fpga'"):
        build_base_images(["fpga"], "repo", "3.11", builder)  # type: ignore[list-item]


def _builder_as(fake: FakeCloudBuild, client: Any, account: str, logs: str) -> ImageBuilder:
    return ImageBuilder(
        project="proj",
        location="us-central1",
        client=client,
        registry=RegistryClient(endpoint=fake.url, token=lambda: None),
        log_fetcher=fake.read_log,
        timeout=30.0,
        poll_interval=(0.01, 0.05),
        service_account=account,
        logs_bucket=logs,
    )


def test_a_build_service_account_runs_the_build_and_its_log_goes_to_our_bucket(
    fake_cloudbuild: FakeCloudBuild, cloudbuild_client: Any
) -> None:
    account = "kn-c-build@proj.iam.gserviceaccount.com"
    builder = _builder_as(fake_cloudbuild, cloudbuild_client, account, "gs://jobs/build-logs")
    fake_cloudbuild.script(BuildOutcome(status="FAILURE", log="ERROR: No matching distribution"))
    with pytest.raises(ImageBuildError) as caught:
        builder.build(_ctx("nosuchpkg==1"), URI)
    [request] = fake_cloudbuild.create_requests
    assert request["serviceAccount"] == f"projects/proj/serviceAccounts/{account}"
    assert request["logsBucket"] == "gs://jobs/build-logs"
    assert request["options"]["logging"] == 2  # GCS_ONLY (REST sends enums as numbers)
    assert "No matching distribution" in caught.value.log_tail  # read from our bucket


def test_a_build_service_account_without_a_logs_bucket_is_refused_before_any_build(
    fake_cloudbuild: FakeCloudBuild, cloudbuild_client: Any
) -> None:
    builder = _builder_as(fake_cloudbuild, cloudbuild_client, "b@proj.iam.gserviceaccount.com", "")
    with pytest.raises(ConfigError, match="needs a logs bucket"):
        builder.build(_ctx(), URI)
    assert fake_cloudbuild.create_calls == 0


def test_the_default_builder_follows_the_api_endpoint_setting_for_builds_and_tags(
    fake_cloudbuild: FakeCloudBuild, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``KINETIC_GCP_API_ENDPOINT`` sends Cloud Build and the registry's tag check to the
    endpoint, anonymously for ``http://`` (how a bundled job reaches an emulator: the image
    tier's buildah-backed fake)."""
    monkeypatch.setenv("KINETIC_GCP_API_ENDPOINT", fake_cloudbuild.url)
    builder = ImageBuilder(project="proj", location="us-central1", poll_interval=(0.01, 0.05))
    ctx = _ctx("six==1.16.0")
    assert builder.ensure(ctx, URI) == URI
    assert builder.ensure(ctx, URI) == URI  # the registry has the tag: no second build
    assert fake_cloudbuild.create_calls == 1
    assert fake_cloudbuild.manifest_requests == 2
