"""Energy diagnostics as ArviZ expects them: energy, divergences, E-BFMI."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from ladder_mcmc import Ladder, Leapfrog, LookAheadRule, MomentumRefresh, lahmc, sample
from ladder_mcmc.diagnostics import e_bfmi, summary, to_inference_data, trace_problems
from ladder_mcmc.models import FunctionTarget, IllConditionedGaussian

GAUSS = IllConditionedGaussian(2, log_condition=1)


def _run(kernel, n=200, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return sample(kernel, GAUSS.sample(4, np.random.default_rng(0)), n, seed=1, **kw)


def test_the_energy_is_the_hamiltonian_after_each_step_on_both_schedules():
    kernel = Ladder(Leapfrog(GAUSS, 0.5, 3), LookAheadRule(3), MomentumRefresh(0.5))
    ragged = _run(kernel, 50, warmup=0)
    both = _run(kernel, 50, warmup=0, schedule="synchronous")
    for name in ("energy", "acceptance_rate", "energy_error"):
        np.testing.assert_array_equal(ragged.step_stats[name], both.step_stats[name])
    final = ragged.final.state
    h = final.energy + 0.5 * np.sum(final.v**2, axis=1)
    np.testing.assert_allclose(ragged.step_stats["energy"][-1], h, rtol=1e-12)
    rate = ragged.step_stats["acceptance_rate"]
    assert np.all((rate >= 0) & (rate <= 1)) and np.all(ragged.step_stats["energy_error"] > -np.inf)


def test_a_wall_is_a_divergence():
    """Density zero beyond |x0| > 1.5: the rungs that cross it diverge."""
    wall = FunctionTarget(
        lambda x: np.where(np.abs(x[:, 0]) < 1.5, 0.5 * np.sum(x**2, axis=1), np.inf),
        lambda x: x,
        dim=2,
    )
    trace = _run(Ladder(Leapfrog(wall, 0.8, 4), LookAheadRule(2), MomentumRefresh(1.0)), 100)
    assert trace.diverging.any()
    np.testing.assert_array_equal(trace.diverging, trace.non_finite_rungs > 0)


def test_arviz_reads_energy_and_divergences():
    az = pytest.importorskip("arviz")
    pytest.importorskip("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    trace = _run(lahmc(GAUSS), 200, warmup=200, thin=2)
    idata = to_inference_data(trace)
    stats = idata.sample_stats
    for name in ("energy", "diverging", "step_size", "acceptance_rate", "rung", "n_steps"):
        assert stats[name].shape == (4, 100), name
    np.testing.assert_allclose(az.bfmi(idata), e_bfmi(trace.step_stats["energy"][1::2]))
    az.plot_energy(idata)
    az.plot_trace(idata, divergences=True)
    assert "E-BFMI" in str(summary(trace))


def test_a_tiny_beta_moves_the_energy_slowly_by_design():
    """β tiny, K = 1: the energy barely moves (E-BFMI far below 0.3), as a persistent
    momentum's should; divided by β (docs/design.md §6.1) nothing warns. The funnel of
    test_e_bfmi_applies.py is the low case that warns."""
    kernel = Ladder(Leapfrog(GAUSS, 0.05, 1), LookAheadRule(1), MomentumRefresh(1e-4))
    trace = _run(kernel, 400, warmup=0)
    assert np.all(e_bfmi(trace.step_stats["energy"]) < 0.3)
    assert not any("E-BFMI" in p for p in trace_problems(trace))
    healthy = _run(lahmc(GAUSS), 400, warmup=200)
    assert not any("E-BFMI" in p for p in trace_problems(healthy))


def test_e_bfmi_of_independent_and_frozen_energies():
    rng = np.random.default_rng(0)
    assert np.all(np.abs(e_bfmi(rng.standard_normal((4000, 3))) - 2) < 0.1)
    walk = np.cumsum(rng.standard_normal((4000, 1)), axis=0)  # a random walk: tiny
    assert e_bfmi(walk)[0] < 0.05
    assert np.isnan(e_bfmi(np.ones((10, 1))))[0]
