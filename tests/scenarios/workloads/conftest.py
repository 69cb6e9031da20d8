"""The workload suite: ML programs written as users write them, run through the public API.

The scenario fixtures (``kinetic_backend``, the backends' environments) come from
``tests/scenarios/conftest.py``; this directory is put on ``sys.path`` so jobs import the
programs by plain name from the code bundle, as a user's own module would be.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
