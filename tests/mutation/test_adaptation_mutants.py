"""Broken variants of warm-up's trajectory criterion are caught by its checks.

Each mutant is ``ladder_mcmc.hamiltonian.warmup.trajectory.chees_n_leapfrog`` with one line
changed in its source; the check of ``tests/unit/run/test_tuning_free.py`` (the criterion written
out directly, on random spectra) must reject every one on some spectrum, and a broken
dual-averaging gain must miss the step size (``test_stans_gain_...`` there).
"""

import sys
from pathlib import Path

import numpy as np
import pytest

from ladder_mcmc.hamiltonian.warmup import trajectory

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "unit" / "run"))
from mutants import source_mutant  # noqa: E402
from test_tuning_free import _brute_force_centre  # noqa: E402

MUTANTS = {
    "no λ² weights": ("safe**2, 0.0", "1.0, 0.0"),
    "no jitter": ("half_width(centres, jitter)", "half_width(centres, 0.0)"),
    "angle of the wrong scale": ("(2.0 * safe)", "(2.0 * xp.sqrt(safe))"),
    "per rung, not per gradient": ("xp.argmax(mean / centres)", "xp.argmax(mean)"),
}


def _mutant(old: str, new: str):
    return source_mutant(trajectory, [(old, new)]).chees_n_leapfrog


@pytest.mark.parametrize("name", list(MUTANTS))
def test_the_written_out_criterion_catches_a_broken_chees(name):
    broken = _mutant(*MUTANTS[name])
    caught = 0
    for seed in range(6):  # the spectra of test_chees_equals_the_criterion_written_out
        rng = np.random.default_rng(seed)
        lam = np.exp(rng.uniform(-2.3, 2.3, size=rng.integers(1, 6)))
        eps = float(rng.uniform(0.05, 0.6))
        jitter = float(rng.choice([0.0, 0.5, 1.0]))
        caught += broken(lam, eps, jitter, 80) != _brute_force_centre(lam, eps, jitter, 80)
    assert caught > 0, name


def test_the_unmutated_criterion_passes_the_same_harness():
    same = _mutant("xp.argmax(mean / centres)", "xp.argmax(mean / centres)")
    rng = np.random.default_rng(0)
    lam = np.exp(rng.uniform(-2.3, 2.3, size=3))
    assert same(lam, 0.3, 1.0, 80) == _brute_force_centre(lam, 0.3, 1.0, 80)
