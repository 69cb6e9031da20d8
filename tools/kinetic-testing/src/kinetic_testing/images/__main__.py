"""``python -m kinetic_testing.images build``: build the stand-in base images (cached)."""

import sys

from .buildah import ImageCommandError, ImageToolMissing
from .standins import cache_root, ensure_standins


def main(argv: list[str]) -> int:
    if argv != ["build"]:
        print("usage: python -m kinetic_testing.images build", file=sys.stderr)
        return 2
    try:
        buildah = ensure_standins()
    except (ImageToolMissing, ImageCommandError) as error:
        print(error, file=sys.stderr)
        return 1
    print(f"stand-in images ready in {cache_root()} ({buildah.driver} storage)")
    return 0


sys.exit(main(sys.argv[1:]))
