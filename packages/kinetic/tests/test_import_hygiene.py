"""``import kinetic`` configures nothing, writes nothing and loads no cloud client."""

import json
import os
import subprocess
import sys
from pathlib import Path

_PROBE = """
import json, logging, sys, threading, warnings

root = logging.getLogger()
root_handlers, root_level = list(root.handlers), root.level
filters = list(warnings.filters)
threads = threading.active_count()

import kinetic
import kinetic.job_status

heavy = sorted(
    name for name in sys.modules
    if name == "kubernetes" or name.startswith(("kubernetes.", "google.cloud"))
)
print(json.dumps({
    "root_handlers_added": [repr(h) for h in root.handlers if h not in root_handlers],
    "root_level_changed": root.level != root_level,
    "kinetic_handlers": [repr(h) for h in logging.getLogger("kinetic").handlers],
    "kinetic_level": logging.getLogger("kinetic").level,
    "warning_filters_changed": list(warnings.filters) != filters,
    "threads_started": threading.active_count() - threads,
    "heavy_modules": heavy,
    "structlog_configured": "structlog" in sys.modules and __import__("structlog").is_configured(),
}))
"""


def test_importing_kinetic_has_no_side_effects(tmp_path: Path) -> None:
    home = tmp_path / "home"
    kinetic_home = tmp_path / "kinetic-home"
    home.mkdir()
    kinetic_home.mkdir()
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("KINETIC_") and k not in {"GOOGLE_CLOUD_PROJECT", "PYTHONWARNINGS"}
    }
    env.update(HOME=str(home), KINETIC_HOME=str(kinetic_home), PYTHONDONTWRITEBYTECODE="1")
    done = subprocess.run(
        [sys.executable, "-c", _PROBE],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == "", "importing kinetic printed something"
    report = json.loads(done.stdout)
    assert report == {
        "root_handlers_added": [],
        "root_level_changed": False,
        "kinetic_handlers": [],
        "kinetic_level": 0,
        "warning_filters_changed": False,
        "threads_started": 0,
        "heavy_modules": [],
        "structlog_configured": False,
    }
    assert list(kinetic_home.iterdir()) == [], "a file was created in KINETIC_HOME"
    assert list(home.iterdir()) == [], "a file was created in the home directory"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["home", "kinetic-home"]
