"""E-BFMI only where it means what its warning says, divided by a partial refresh's β.

docs/design.md §6.1: for a Gaussian momentum refreshed by ``√(1−β) v + √β n`` the
energy's mean squared change per step is ``β d`` (``d`` coordinates), so ``B / β`` is
about 1 on a Gaussian for every ``β``; a kernel without a Gaussian momentum refresh gets
no E-BFMI and no warning.
"""

from __future__ import annotations

import types
import warnings

import numpy as np
import pytest
from scipy.stats import binom

from ladder_mcmc import (
    DirectionRefresh,
    Ladder,
    Leapfrog,
    LookAhead,
    LookAheadRule,
    MomentumRefresh,
    ReversibleMap,
    lahmc,
    sample,
)
from ladder_mcmc.diagnostics import e_bfmi, summary, trace_problems
from ladder_mcmc.diagnostics.energy import (
    refresh_fraction,
    trace_e_bfmi,
    trace_refresh_fraction,
)
from ladder_mcmc.hamiltonian import NormalizedMomentumRefresh, PowerKinetic
from ladder_mcmc.hamiltonian.harmonic import HarmonicFlow
from ladder_mcmc.hamiltonian.jittered_length import LengthJitter
from ladder_mcmc.ladder import InnerRefresh
from ladder_mcmc.ladder.log_scale import LogScaleRefresh
from ladder_mcmc.models import IllConditionedGaussian, NealsFunnel

STANDARD = IllConditionedGaussian(2, log_condition=0)  # N(0, I_2)
FUNNEL = NealsFunnel(10)  # Var E ≈ 190 against Var K = 5: B ≈ 0.05 (§6.1)


def _run(kernel, target, n_steps, chains=16):
    """``n_steps`` from exact draws, no warm-up, the run's own warnings silenced."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        x0 = target.sample(chains, np.random.default_rng(0))
        return sample(kernel, x0, n_steps, seed=1, warmup=0)


def _tolerance(per_chain: np.ndarray, beta: float, n_steps: int) -> float:
    """4 Monte Carlo standard errors of the mean over independent chains, plus the
    estimator's bias: the within-chain spread of ``E`` lacks about ``τ / n`` of its
    variance, ``τ = 4/β − 1`` the integrated autocorrelation time of an energy whose
    lag-1 correlation ``ρ₁`` is ``1 − β/2`` (``B`` estimates ``2 (1 − ρ₁)``, and is about
    ``β`` on a Gaussian: §6.1)."""
    mcse = per_chain.std(ddof=1) / np.sqrt(per_chain.size)
    return 4 * mcse + (4 / beta - 1) / n_steps


def _bfmi_messages(trace) -> list[str]:
    return [p for p in trace_problems(trace) if "E-BFMI" in p]


class CycleWalk(ReversibleMap):
    """The README's map: k -> k+1 on a cycle of n states; density binomial(n-1, 1/2)."""

    def __init__(self, n):
        self.n, self.logp = n, binom.logpmf(np.arange(n), n - 1, 0.5)

    def forward(self, k):
        return (k + 1) % self.n

    def backward(self, k):
        return (k - 1) % self.n

    def log_density(self, k):
        return self.logp[k]


# ------------------------------------------------------------------------- where it applies
def test_a_discrete_map_without_momentum_gets_no_e_bfmi():
    """The README's CycleWalk: its energies would give E-BFMI below 0.3 on most chains,
    but no momentum is refreshed, so nothing is computed or warned."""
    kernel = LookAhead(CycleWalk(21), max_rungs=3, refresh=DirectionRefresh(0.05))
    trace = _run(kernel, types.SimpleNamespace(sample=lambda n, rng: np.full(n, 10)), 2000)
    assert np.sum(e_bfmi(trace.step_stats["energy"]) < 0.3) >= 4  # what used to warn
    assert trace_e_bfmi(trace) is None
    assert _bfmi_messages(trace) == []


def test_a_persistent_momentum_on_a_gaussian_does_not_warn():
    """β = 0.3 on N(0, I_2) from exact draws, 2000 steps: the energy moves about β times
    as fast as under a full refresh, by design (the undivided ratio is below 0.3 on some
    chains); divided by β it is about 1 (within 4 Monte Carlo standard errors over the
    independent chains) and nothing warns."""
    kernel = Ladder(Leapfrog(STANDARD, 0.5, 5), LookAheadRule(3), MomentumRefresh(0.3))
    trace = _run(kernel, STANDARD, 2000)
    raw = e_bfmi(trace.step_stats["energy"])
    assert np.any(raw < 0.3)
    scaled = trace_e_bfmi(trace)
    np.testing.assert_allclose(scaled, raw / 0.3)
    assert np.all(scaled > 0.3)
    assert abs(scaled.mean() - 1) < _tolerance(scaled, 0.3, 2000)
    assert _bfmi_messages(trace) == []
    text = str(summary(trace))
    assert "E-BFMI" in text and "divided by beta" in text


def test_the_energy_moves_beta_d_per_step_under_an_exact_flow():
    """The identity of §6.1 through a kernel: with an exact Hamiltonian flow (every rung
    accepted) the energy changes by the refresh alone, and its mean squared change per
    step is β d, the mean over 16 independent chains within 4 standard errors."""
    beta, d = 0.3, 2
    kernel = Ladder(HarmonicFlow(STANDARD, 1.0, 1.0), LookAheadRule(3), MomentumRefresh(beta))
    trace = _run(kernel, STANDARD, 2000)
    assert trace.transition_fractions()["L1"] == 1.0
    per_chain = np.mean(np.diff(trace.step_stats["energy"], axis=0) ** 2, axis=0) / beta
    mcse = per_chain.std(ddof=1) / np.sqrt(per_chain.size)
    assert abs(per_chain.mean() - d) < 4 * mcse
    assert abs(trace_e_bfmi(trace).mean() - 1) < _tolerance(trace_e_bfmi(trace), beta, 2000)


@pytest.mark.parametrize("beta", [1.0, 0.3])
def test_a_funnel_still_warns(beta):
    """Neal's funnel (10-d) from exact draws: the energy spreads far more widely than a
    momentum carries it, under a full refresh and, divided by β, under a partial one. The
    run is long against the energy's relaxation, about Var E / (β d) ≈ 60 steps at β = 0.3,
    so that each chain's energies span their law."""
    kernel = Ladder(Leapfrog(FUNNEL, 0.2, 5), LookAheadRule(3), MomentumRefresh(beta))
    trace = _run(kernel, FUNNEL, 2000, chains=8)
    assert np.all(trace_e_bfmi(trace) < 0.3)
    (message,) = _bfmi_messages(trace)
    assert "8 of 8 chains" in message
    assert ("divided by the partial refresh's beta" in message) == (beta < 1)
    assert "below 0.3" in str(summary(trace))


def test_a_kernel_without_a_gaussian_momentum_refresh_prints_n_a():
    """Leapfrog with a direction refresh only: energies are recorded, E-BFMI is not."""
    kernel = Ladder(Leapfrog(STANDARD, 0.5, 5), LookAheadRule(3), DirectionRefresh(0.5))
    trace = _run(kernel, STANDARD, 50, chains=4)
    s = summary(trace)
    assert s.e_bfmi is None and s.e_bfmi_note.startswith("n/a")
    assert "E-BFMI: n/a" in str(s)


# ------------------------------------------------------------------------- the fraction β
KIN = PowerKinetic(1.5, np.ones(2))


@pytest.mark.parametrize(
    ("refresh", "expected"),
    [
        (MomentumRefresh(0.3), 0.3),
        (MomentumRefresh(1.0), 1.0),
        (MomentumRefresh(1.0, KIN), 1.0),  # a full redraw of any kinetic energy
        (MomentumRefresh(0.5) + MomentumRefresh(0.5), 0.75),
        (MomentumRefresh(0.4) + DirectionRefresh(0.1) + LengthJitter(5, 0.5), 0.4),
        (NormalizedMomentumRefresh(1.0, KIN), 1.0),
        (NormalizedMomentumRefresh(0.5, KIN), None),  # K not quadratic: no known scale
        (DirectionRefresh(0.05), None),  # no momentum
        (LogScaleRefresh(0.5), None),  # not a leapfrog momentum
        (None, None),
    ],
)
def test_the_refresh_fraction_of_a_description(refresh, expected):
    described = None if refresh is None else refresh.describe()
    got = refresh_fraction({"kernel": "Ladder", "refresh": described})
    assert got == (None if expected is None else pytest.approx(expected))
    if described is not None:
        assert refresh_fraction(described) == got


def test_an_auxiliary_redraw_or_an_unknown_part_makes_it_n_a():
    aux = InnerRefresh(MomentumRefresh(0.5)).describe()
    redraw = {"refresh": "AuxiliaryRefresh", "law": "ShorterFarOut"}  # its describe()'s key
    composed = {"refresh": "ComposedRefresh", "parts": [aux, redraw]}
    assert refresh_fraction(aux) == pytest.approx(0.5)
    assert refresh_fraction(composed) is None
    mine = {"refresh": "Mine"}
    unknown = {"refresh": "ComposedRefresh", "parts": [MomentumRefresh(0.5).describe(), mine]}
    assert refresh_fraction(unknown) is None


def test_the_default_kernel_is_divided_by_its_adapted_beta():
    trace = _run(lahmc(STANDARD), STANDARD, 100, chains=4)
    beta = trace_refresh_fraction(trace)
    assert beta is not None and np.all((beta > 0) & (beta <= 1))
    np.testing.assert_allclose(beta, refresh_fraction(trace.kernel))


def test_groups_with_different_betas_are_read_per_chain():
    def kernel(beta):
        return {"kernel": "Ladder", "refresh": MomentumRefresh(beta).describe()}

    grouped = {"kernel": "Ladder", "groups": [kernel(0.5), kernel(0.25)]}
    energy = np.random.default_rng(0).standard_normal((50, 4))
    trace = types.SimpleNamespace(
        rungs=np.ones((50, 4), dtype=int),
        kernel=grouped,
        warmup=types.SimpleNamespace(group_of_chain=np.array([0, 0, 1, 1])),
        step_stats={"energy": energy},
    )
    np.testing.assert_array_equal(trace_refresh_fraction(trace), [0.5, 0.5, 0.25, 0.25])
    np.testing.assert_allclose(trace_e_bfmi(trace), e_bfmi(energy) / [0.5, 0.5, 0.25, 0.25])
    trace.warmup = None  # which chain ran which β is unknown: n/a
    assert trace_e_bfmi(trace) is None


@pytest.mark.parametrize("bad", [0.0, -0.5, 1.5, np.nan, [0.5, 0.5, 0.5]])
def test_a_bad_refresh_fraction_is_refused(bad):
    with pytest.raises(ValueError, match="refresh_fraction"):
        e_bfmi(np.zeros((10, 2)), bad)
