"""Names shared by the provisioning tests (imported by name; conftest puts this directory on
``sys.path``)."""

from collections.abc import Callable

from click.testing import Result

PROJECT = "kp-test"
ZONE = "us-central1-a"
Invoke = Callable[..., Result]
