"""Every script in ``examples/`` runs to completion at its ``--quick`` size."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples").glob("*.py"))
NEEDS = {"eight_schools_pymc": "pymc", "logistic_regression": "jax"}
"""Examples that need an optional extra: skipped without it."""


def test_there_are_examples():
    assert len(EXAMPLES) >= 5


#: the examples that take longest (a PyMC or JAX compilation, a long run): the slow run
SLOW = {"eight_schools_pymc", "logistic_regression", "rough_well"}


@pytest.mark.parametrize(
    "script",
    [pytest.param(p, marks=pytest.mark.slow) if p.stem in SLOW else p for p in EXAMPLES],
    ids=[p.stem for p in EXAMPLES],
)
def test_example_runs_quick(script):
    if script.stem in NEEDS:
        pytest.importorskip(NEEDS[script.stem])
    # this checkout's ladder_mcmc first, whatever else is installed
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
    done = subprocess.run(
        [sys.executable, str(script), "--quick"],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": path},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip()
