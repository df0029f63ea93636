"""Broken variants of warm-up's first mass are caught by its checks.

Each source mutant is ``ladder_mcmc.hamiltonian.warmup.moments.initial_inverse_mass`` with
one line changed; the values written out by hand in
``tests/unit/hamiltonian/test_initial_mass.py`` must reject every one, and the gradient's
size for its inverse must also lose the saving that test measures. A ``begin`` that keeps
the chains' old momenta and densities after the guess must fail the restart check, and one
that guesses for a map with a law must fail that map's check.
"""

import sys
from pathlib import Path

import numpy as np
import pytest

from ladder_mcmc import lahmc
from ladder_mcmc.hamiltonian import span_lahmc
from ladder_mcmc.hamiltonian.warmup import adaptation, moments

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "unit" / "hamiltonian"))
import test_initial_mass as checks  # noqa: E402
from mutants import source_mutant  # noqa: E402

MUTANTS = {
    "the size, not its inverse": ("1.0 / np.where(ok, g, 1.0)", "np.where(ok, g, 1.0)"),
    "no cap at 1": ("lo, hi = INITIAL_INVERSE_MASS", "lo, hi = INITIAL_INVERSE_MASS[0], 1e3"),
    "the median over chains": ("np.mean(np.abs(g), axis=0)", "np.median(np.abs(g), axis=0)"),
    "non-finite chains dropped": (
        "np.mean(np.abs(g), axis=0)",
        "np.nanmean(np.where(np.isfinite(g), np.abs(g), np.nan), axis=0)",
    ),
    "no check of the shape": (
        "if g is None or g.ndim != 2 or g.shape[1] != dim:",
        "if g is None:",
    ),
}


def _mutant(old: str, new: str):
    return source_mutant(moments, [(old, new)]).initial_inverse_mass


@pytest.mark.parametrize("name", list(MUTANTS))
def test_the_values_by_hand_catch_a_broken_guess(name):
    broken = _mutant(*MUTANTS[name])
    with np.errstate(all="ignore"), pytest.raises((AssertionError, ValueError)):
        checks.check_values(broken)


def test_the_gradient_size_for_its_inverse_loses_the_saving(monkeypatch):
    broken = _mutant(*MUTANTS["the size, not its inverse"])
    with pytest.raises(AssertionError):  # it spent 1.00 of the unit mass's gradients
        checks.assert_saves(monkeypatch, 0, broken)


def test_a_begin_without_the_restart_is_caught(monkeypatch):
    real = adaptation.restart_chains

    def keep_old_momenta(kernel, ks, rng, momentum):
        return real(kernel, ks, rng, momentum=False)

    monkeypatch.setattr(adaptation, "restart_chains", keep_old_momenta)
    with pytest.raises(AssertionError):
        checks.check_restarted(*checks.begin(lahmc(checks.TARGET), checks._points(1, chains=4000)))


def test_a_law_given_the_guess_is_caught(monkeypatch):
    old = 'guess = unset and getattr(kernel.map, "law", None) is None'
    mutant = source_mutant(adaptation, [(old, "guess = unset")])
    monkeypatch.setattr(adaptation.HMCAdaptation, "begin", mutant.HMCAdaptation.begin)
    with pytest.raises(AssertionError):
        checks.test_a_map_with_a_law_starts_from_the_identity(span_lahmc)
