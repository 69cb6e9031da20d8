"""Every ``KINETIC_*`` variable the published packages read is declared in the settings
registry, and none is read from ``os.environ`` behind the registry's back."""

import re
from pathlib import Path

from kinetic.settings import registry

ROOT = Path(__file__).resolve().parents[1]
SOURCES = sorted((ROOT / "packages").glob("*/src/**/*.py"))
NAME = re.compile(r"\bKINETIC_[A-Z0-9_]*[A-Z0-9]\b")
DIRECT_READ = re.compile(
    r"""(?:environ\.get\(|getenv\(|environ\[)\s*["']KINETIC_[A-Z0-9_]+["']\s*(?!\]\s*=[^=])"""
)
NOT_SETTINGS = {
    "KINETIC_BUILD_CONTEXT": "a variable of the Cloud Build step, set and read inside it",
}


def test_every_kinetic_variable_named_in_the_source_is_declared() -> None:
    declared = {spec.env for spec in registry()}
    undeclared = {
        f"{name} ({path.relative_to(ROOT)})"
        for path in SOURCES
        for name in NAME.findall(path.read_text())
        if name not in declared and name not in NOT_SETTINGS
    }
    assert undeclared == set(), "declare these in a settings module, with their help line"


def test_no_module_reads_a_kinetic_variable_directly() -> None:
    direct = [
        f"{path.relative_to(ROOT)}: {match.group(0)}"
        for path in SOURCES
        for match in DIRECT_READ.finditer(path.read_text())
    ]
    assert direct == [], "read through the declaration: SETTING.from_env() / .value()"


def test_the_checks_can_fail() -> None:
    assert NAME.findall('x = os.environ.get("KINETIC_MADE_UP")') == ["KINETIC_MADE_UP"]
    assert DIRECT_READ.search('os.environ.get("KINETIC_MADE_UP")')
    assert DIRECT_READ.search('os.environ["KINETIC_MADE_UP"]')
    assert not DIRECT_READ.search('os.environ["KINETIC_OUTPUT_DIR"] = path')
