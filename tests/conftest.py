"""Shared test settings: Hypothesis profiles, and the helper modules on the path.

The unit tests live in ``tests/unit/<subpackage>/``, one folder per subpackage of
``ladder_mcmc`` (``tests/unit/engine`` for the engine's loops, backends and streams),
beside ``tests/exact``, ``tests/statistical`` and ``tests/mutation``. Test modules have no
``__init__.py`` (pytest imports each by its basename, so every basename is unique across
the folders); the helpers they share — ``driver_equivalence`` (the composition property),
``interrupting``, ``trace_assertions``, ``check_properties`` (in ``tests/unit``) and
``exact_properties`` (in ``tests/exact``), ``mutants`` (in ``tests/mutation``) — are
imported by bare name from the folders put on ``sys.path`` here. The default run
(``-m 'not slow'``) keeps JAX compilations few (1–4 s each): broad JAX sweeps are
marked ``slow``.
"""

import os
import sys
from pathlib import Path

from hypothesis import HealthCheck, settings

HERE = Path(__file__).resolve().parent
for folder in ("unit", "exact", "mutation"):
    if str(HERE / folder) not in sys.path:
        sys.path.insert(0, str(HERE / folder))

settings.register_profile(
    "default", deadline=None, suppress_health_check=[HealthCheck.too_slow], print_blob=True
)
settings.register_profile("ci", parent=settings.get_profile("default"), derandomize=True)
settings.load_profile("ci" if os.environ.get("CI") else "default")
