"""``hamiltonian.state_length`` and ``hamiltonian.refined_step``: the laws and the costs.

* each law is normalised on the states it is given (the probabilities of every ``α``
  sum to one), its draws have positive probability, and it is invariant under the flip;
* the maps: a state-length rung is bit for bit a plain ``Leapfrog(n)``; a refined rung
  at level ``ℓ`` is ``Leapfrog(ε / 2^ℓ, M 2^ℓ)``;
* exact gradient counts: one application plus the law at the new rung costs exactly
  ``cost_of`` on a counting target; a state-length step costs exactly what the trace
  records;
* bad settings are ``ValueError``.
"""

from __future__ import annotations

import attrs
import numpy as np
import pytest
from multiscale_funnel import Funnel, neck_scale

from ladder_mcmc import Leapfrog, sample
from ladder_mcmc.diagnostics import GradientCounter
from ladder_mcmc.hamiltonian.refined_step import RefinementLaw, refined_lahmc
from ladder_mcmc.hamiltonian.state_length import LocalLengthLaw, state_length_lahmc

FUNNEL = Funnel(3)


def _states(kernel, n=32, seed=0):
    rng = np.random.default_rng(seed)
    return kernel.map.prepare(FUNNEL.sample(n, rng), rng)


def test_the_length_law_is_normalised_flip_invariant_and_drawn_in_its_support():
    kernel = state_length_lahmc(FUNNEL, 0.1, time=1.5, max_steps=40, scale=neck_scale)
    law, states = kernel.map.law, _states(kernel)
    total = sum(np.exp(law.log_prob(np.full(32, n), states.inner)) for n in range(1, 41))
    np.testing.assert_allclose(total, 1.0, rtol=1e-12)
    assert np.all(np.isfinite(law.log_prob(states.alpha, states.inner)))
    flipped = kernel.map.flip(states)
    np.testing.assert_array_equal(
        law.log_prob(states.alpha, flipped.inner), law.log_prob(states.alpha, states.inner)
    )
    lo, hi = law.bounds(states.inner)
    assert np.all((lo <= states.alpha) & (states.alpha <= hi)) and np.all(hi <= 40)


def test_the_length_law_from_the_gradient_needs_no_hint():
    law = LocalLengthLaw(0.1, time=1.0, max_steps=50)
    kernel = state_length_lahmc(FUNNEL, 0.1, max_steps=50)
    states = _states(kernel)
    grad = states.inner.grad
    expected = np.clip(np.round(np.sqrt(3) / np.linalg.norm(grad, axis=1) / 0.1), 1, 50)
    np.testing.assert_array_equal(law.nominal(states.inner), expected)


def test_the_refinement_law_is_normalised_and_flip_invariant():
    kernel = refined_lahmc(FUNNEL, 0.8, n_steps=2, threshold=0.3, max_level=3)
    law, states = kernel.map.law, _states(kernel)
    probs = np.array([np.exp(law.log_prob(np.full(32, k), states.inner)) for k in range(4)])
    np.testing.assert_allclose(probs.sum(axis=0), 1.0, rtol=1e-12)
    assert len(np.unique(probs.argmax(axis=0))) > 1  # the level varies over the funnel
    assert np.all(np.isfinite(law.log_prob(states.alpha, states.inner)))
    flipped = kernel.map.flip(states)
    np.testing.assert_array_equal(
        law.log_prob(states.alpha, flipped.inner), law.log_prob(states.alpha, states.inner)
    )
    star = law.level_star(states.inner)
    assert np.all((states.alpha == star) | (states.alpha == np.minimum(star + 1, 3)))


def test_a_state_length_rung_is_a_plain_leapfrog():
    kernel = state_length_lahmc(FUNNEL, 0.1, max_steps=12, scale=neck_scale)
    states = _states(kernel, n=6)
    rung = kernel.map.forward(states)
    for i, n in enumerate(states.alpha):
        one = Leapfrog(FUNNEL, 0.1, int(n)).integrate(
            states.inner.x[i : i + 1], states.inner.v[i : i + 1], states.inner.grad[i : i + 1]
        )
        np.testing.assert_array_equal(rung.inner.x[i], one.x[0])
        np.testing.assert_array_equal(rung.inner.v[i], one.v[0])


def test_a_refined_rung_integrates_the_same_time_with_finer_steps():
    kernel = refined_lahmc(FUNNEL, 0.4, n_steps=3, max_level=3)
    states = _states(kernel, n=6)
    states = attrs.evolve(states, alpha=np.array([0, 1, 2, 3, 1, 0]))
    rung = kernel.map.forward(states)
    for i, level in enumerate(states.alpha):
        one = Leapfrog(FUNNEL, 0.4 / 2**level, 3 * 2**level).integrate(
            states.inner.x[i : i + 1], states.inner.v[i : i + 1], states.inner.grad[i : i + 1]
        )
        np.testing.assert_allclose(rung.inner.x[i], one.x[0], rtol=1e-13, atol=1e-13)


@pytest.mark.parametrize("which", ["length", "refined"])
def test_cost_of_counts_the_map_and_the_law_at_the_new_rung(which):
    counting = GradientCounter(FUNNEL)
    if which == "length":
        kernel = state_length_lahmc(counting, 0.1, max_steps=20, scale=neck_scale)
    else:
        kernel = refined_lahmc(counting, 0.8, n_steps=2, threshold=0.3, max_level=3)
    states = _states(kernel, n=16)
    for i in range(16):  # chain by chain: each chain's own count
        one = type(states)(
            attrs.evolve(
                states.inner,
                **{f: getattr(states.inner, f)[i : i + 1] for f in ("x", "v", "energy", "grad")},
            ),
            states.alpha[i : i + 1],
        )
        counting.rows = 0
        kernel.map.log_density(kernel.map.forward(one))
        assert counting.rows == kernel.map.cost_of(one)[0]


def test_a_state_length_step_costs_what_the_trace_records():
    counting = GradientCounter(FUNNEL)
    kernel = state_length_lahmc(counting, 0.1, max_steps=20, scale=neck_scale)
    init = FUNNEL.sample(8, np.random.default_rng(1))
    counting.rows = 0
    trace = sample(kernel, init, 30, seed=2, warmup=0, checks=False)
    prepare_rows = 8  # Leapfrog.prepare evaluates the gradient once per chain
    assert counting.rows == int(np.sum(trace.grad_evals)) + prepare_rows


@pytest.mark.parametrize(
    "build",
    [
        lambda: LocalLengthLaw(0.1, low=0.0),
        lambda: LocalLengthLaw(0.1, max_steps=0),
        lambda: RefinementLaw(FUNNEL, 0.1, max_level=0),
        lambda: RefinementLaw(FUNNEL, 0.1, threshold=-1.0),
    ],
)
def test_bad_settings_are_refused(build):
    with pytest.raises(ValueError):
        build()
