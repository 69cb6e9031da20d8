"""Turn a user's call into stored artifacts: the code bundle and the pickled call."""

from kinetic.packaging.bundle import CodeBundle, build_bundle, find_project_root
from kinetic.packaging.serialize import serialize_arguments, serialize_call, serialize_function

__all__ = [
    "CodeBundle",
    "build_bundle",
    "find_project_root",
    "serialize_arguments",
    "serialize_call",
    "serialize_function",
]
