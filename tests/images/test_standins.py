"""The stand-ins' names and keys (no build: these run everywhere)."""

from kinetic_gke.images.dockerfile import UV_IMAGE, base_image_for
from kinetic_testing.images import standins


def test_the_stand_ins_carry_the_names_the_generated_dockerfile_uses() -> None:
    python_base, uv_image = standins("3.11")
    assert python_base.name == f"docker.io/library/{base_image_for('cpu', '3.11')}"
    assert uv_image.name == UV_IMAGE


def test_a_stand_in_is_keyed_by_what_goes_into_it() -> None:
    assert standins("3.11")[0].key == standins("3.11")[0].key
    assert standins("3.11")[0].key != standins("3.12")[0].key
