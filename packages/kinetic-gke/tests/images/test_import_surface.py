"""Importing kinetic_gke.images stays cheap: Google clients load only when a build happens."""

import subprocess
import sys


def test_importing_images_loads_no_google_client() -> None:
    probe = (
        "import sys, kinetic_gke.images\n"
        "print(sorted(m for m in sys.modules if m.startswith(('google', 'grpc'))))"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert out == "[]"
