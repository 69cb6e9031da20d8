"""The image tier's helpers (``image_jobs``) are imported by plain name."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
