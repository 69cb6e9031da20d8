"""Names shared by the provisioning tests (imported by name; conftest puts this directory on
``sys.path``)."""

from collections.abc import Callable
from typing import Any

from click.testing import Result

PROJECT = "kp-test"
ZONE = "us-central1-a"
Invoke = Callable[..., Result]
_MUTATIONS = (".create", ".enable", ".setIam", ".update", ".delete")


def ok(result: Any) -> str:
    """The command's stdout, once it is known to have succeeded."""
    assert result.exit_code == 0, f"{result.output}\n{result.stderr if result.stderr_bytes else ''}"
    return str(result.stdout)


def mutations(calls: list[str]) -> list[str]:
    """The calls among ``calls`` (route names of the Google Cloud fake) that change something."""
    return [call for call in calls if call.endswith(_MUTATIONS)]
