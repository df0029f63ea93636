"""The multiscale leapfrogs keep the funnel (docs/design.md §14): contracts and invariance.

On Neal's funnel in 3 dimensions (``v ~ N(0, 9)``, ``x_i | v ~ N(0, e^v)``):

* the map contract of the three ``AuxiliaryMap``'s on phase states (inverse, flip, volume over
  ``(x, v)``, the law's flip invariance);
* one-step invariance of the whole step (move, momentum refresh, redraw of ``α``) from
  exact draws: 20 000 chains for the state-dependent length, 50 000 for the refined step
  (a coarse step, ``ε = 2``, so that the levels differ), 30 000 for the level drawn from
  the gradient (``span_lahmc``, ``ε = 0.7``, levels −2 … 2, ``β = ½``), total false alarm 1e-6;
  ``tests/mutation/test_multiscale_mutants.py`` shows the same checks failing when
  ``p(α | ζ)`` is dropped from the density;
* slow: 64 chains × 2000 steps on the 5-d funnel, ``E v = 0`` and ``Var v = 9`` within five Monte
  Carlo standard errors (ESS-based, ``mcse_mean`` and the delta method for the variance).
"""

from __future__ import annotations

import numpy as np
import pytest
from multiscale_funnel import Funnel, length_kernel, neck_scale, refined_kernel, span_kernel

from ladder_mcmc import sample
from ladder_mcmc.diagnostics import mcse_mean, mcse_sd
from ladder_mcmc.hamiltonian.refined_step import refined_lahmc
from ladder_mcmc.hamiltonian.span_step import span_lahmc
from ladder_mcmc.hamiltonian.state_length import state_length_lahmc
from ladder_mcmc.verify import assert_map, assert_one_step_invariance

FUNNEL = Funnel(3)


@pytest.mark.parametrize(
    "build",
    [length_kernel, lambda: refined_kernel(0.5), lambda: span_kernel(0.3)],
    ids=["length", "refined", "span"],
)
def test_the_map_contract_holds_on_the_funnel(build):
    kernel = build()
    rng = np.random.default_rng(0)
    states = kernel.map.prepare(FUNNEL.sample(16, rng), rng)
    assert len(np.unique(states.alpha)) > 1
    # up to 8 · 2 steps per application near the neck: round-off of a longer trajectory
    report = assert_map(kernel.map, states, rng, rtol=1e-10)
    assert report.law_flip_error == 0


def test_one_step_keeps_the_funnel_with_a_length_drawn_from_the_position():
    report = assert_one_step_invariance(length_kernel(), FUNNEL.sample, n_chains=20_000, seed=1)
    assert report.moved_fraction > 0.5


def test_one_step_keeps_the_funnel_with_a_refined_step():
    report = assert_one_step_invariance(refined_kernel(), FUNNEL.sample, n_chains=50_000, seed=1)
    assert report.moved_fraction > 0.5


def test_one_step_keeps_the_funnel_with_a_level_drawn_from_the_gradient():
    report = assert_one_step_invariance(span_kernel(0.7), FUNNEL.sample, n_chains=30_000, seed=1)
    assert report.moved_fraction > 0.5


def _check_v(trace, label):
    v = trace.positions[:, :, 0]
    mean, var = v.mean(), v.var()
    se_mean = float(mcse_mean(v))
    # Var v = E (v − μ)²: the delta method on the sd, d(σ²) = 2σ dσ
    se_var = float(2 * np.sqrt(var) * mcse_sd(v))
    assert abs(mean) < 5 * se_mean, (label, mean, se_mean)
    assert abs(var - 9.0) < 5 * se_var, (label, var, se_var)
    assert se_mean < 0.3 and se_var < 2.0, (label, se_mean, se_var)  # informative


@pytest.mark.slow
def test_a_length_drawn_from_the_position_samples_the_funnel():
    funnel = Funnel(5)
    kernel = state_length_lahmc(funnel, 0.05, time=1.5, max_steps=128, scale=neck_scale)
    init = funnel.sample(64, np.random.default_rng(3))
    _check_v(sample(kernel, init, 2000, seed=4, warmup=0, checks=False), "length")


@pytest.mark.slow
def test_a_refined_step_samples_the_funnel():
    funnel = Funnel(5)
    kernel = refined_lahmc(funnel, 0.4, n_steps=6, threshold=0.5, max_level=4)
    init = funnel.sample(64, np.random.default_rng(3))
    _check_v(sample(kernel, init, 2000, seed=4, warmup=0, checks=False), "refined")


@pytest.mark.slow
def test_a_level_drawn_from_the_gradient_samples_the_funnel():
    funnel = Funnel(5)
    kernel = span_lahmc(funnel, 0.3, n_steps=4, beta=1.0, min_level=-2, max_level=4)
    init = funnel.sample(64, np.random.default_rng(3))
    _check_v(sample(kernel, init, 2000, seed=4, warmup=0, checks=False), "span")
