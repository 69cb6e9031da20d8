"""Container images for Kinetic's Kubernetes backends.

The client calls :func:`resolve_image` once per submission (once per batch) and records
``ResolvedImage.uri`` in the job record; for ``prebuilt`` it also stores
``ResolvedImage.requirements`` in the call descriptor. Heavy clients (Cloud Build, Cloud
Storage, google-auth) are imported only when a build or registry check actually happens.
"""

from kinetic_gke.images.cloudbuild import ImageBuilder, ImageBuildError, build_request
from kinetic_gke.images.dockerfile import BASE_IMAGES, BuildContext, build_context, content_hash
from kinetic_gke.images.registry import RegistryClient, parse_image_reference
from kinetic_gke.images.resolve import (
    ResolvedImage,
    build_base_images,
    bundled_image_uri,
    kinetic_version,
    prebuilt_image_uri,
    region_from_zone,
    resolve_base_image_repo,
    resolve_image,
)
from kinetic_protocol.requirements import (
    Requirements,
    discover_requirements,
    prebuilt_requirements,
)

__all__ = [
    "BASE_IMAGES",
    "BuildContext",
    "ImageBuildError",
    "ImageBuilder",
    "RegistryClient",
    "Requirements",
    "ResolvedImage",
    "build_base_images",
    "build_context",
    "build_request",
    "bundled_image_uri",
    "content_hash",
    "discover_requirements",
    "kinetic_version",
    "parse_image_reference",
    "prebuilt_image_uri",
    "prebuilt_requirements",
    "region_from_zone",
    "resolve_base_image_repo",
    "resolve_image",
]
