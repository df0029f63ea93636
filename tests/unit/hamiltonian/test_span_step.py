"""``hamiltonian.gradient_level`` and ``hamiltonian.span_step``: the law, the family, the kernel.

* the law is normalised, positive at every level wherever it is evaluated (also where
  the gradient is zero or not finite), centred at ``log₂(ε ‖∇E‖_{M⁻¹} / (c √d))`` and
  invariant under the flip; its draws follow it;
* a rung at level ``ℓ ≥ 0`` is bit for bit ``Leapfrog(ε / 2^ℓ, M 2^ℓ)``, at ``ℓ < 0``
  ``Leapfrog(ε, M 2^{−ℓ})``; with levels ``0 … ℓ_max`` the family is the refined leapfrog;
* exact gradient counts: one application and the law at the new rung cost ``cost_of``;
  a step costs what the trace records;
* the constructor adapts what it is not given (``ε``, mass, ``M``, ``β``), with the
  leapfrog family's warm-up, on both backends (JAX in the slow run; the composition
  property runs the map on JAX by default), and the law follows the family;
* bad settings are ``ValueError``.
"""

from __future__ import annotations

import warnings

import attrs
import numpy as np
import pytest
from multiscale_funnel import Funnel, span_kernel

from ladder_mcmc import Leapfrog, sample
from ladder_mcmc.diagnostics import GradientCounter
from ladder_mcmc.engine.warmup import Warmup
from ladder_mcmc.hamiltonian import (
    GradientLevelLaw,
    Metric,
    PhaseState,
    RefinedLeapfrog,
    SpanLeapfrog,
    span_lahmc,
)
from ladder_mcmc.hamiltonian.warmup.adaptation import HMCAdaptation
from ladder_mcmc.hamiltonian.warmup.parameters import apply_warmup
from ladder_mcmc.models import IllConditionedGaussian

FUNNEL = Funnel(3)


def _states(kernel, n=32, seed=0):
    rng = np.random.default_rng(seed)
    return kernel.map.prepare(FUNNEL.sample(n, rng), rng)


def test_the_law_is_normalised_positive_flip_invariant_and_centred_on_the_gradient():
    kernel = span_kernel()
    law, states = kernel.map.law, _states(kernel)
    probs = np.array([np.exp(law.log_prob(np.full(32, k), states.inner)) for k in range(-2, 3)])
    np.testing.assert_allclose(probs.sum(axis=0), 1.0, rtol=1e-12)
    assert np.all(probs > 0)
    assert len(np.unique(probs.argmax(axis=0))) > 2  # the level follows the funnel
    assert np.all(law.log_prob(np.full(32, 3), states.inner) == -np.inf)
    assert np.all(law.log_prob(np.full(32, -3), states.inner) == -np.inf)
    flipped = kernel.map.flip(states)
    for k in range(-2, 3):
        np.testing.assert_array_equal(
            law.log_prob(np.full(32, k), flipped.inner), law.log_prob(np.full(32, k), states.inner)
        )
    grad = states.inner.grad
    expected = np.log2(1.0 * np.linalg.norm(grad, axis=1) / (1.0 * np.sqrt(3)))
    np.testing.assert_allclose(law.centre(states.inner), np.clip(expected, -7, 6), rtol=1e-12)


def test_the_law_whitens_the_gradient_with_the_mass():
    grad = np.array([[3.0, 4.0]])
    state = PhaseState(x=np.zeros((1, 2)), v=np.zeros((1, 2)), energy=np.zeros(1), grad=grad)
    plain = GradientLevelLaw(0.5, 1.0).centre(state)
    heavy = GradientLevelLaw(0.5, 1.0, metric=Metric(np.array([4.0, 4.0]))).centre(state)
    np.testing.assert_allclose(plain, np.log2(0.5 * 5.0 / np.sqrt(2)), rtol=1e-14)
    np.testing.assert_allclose(heavy, plain + 1.0, rtol=1e-14)


def test_the_law_is_positive_where_the_gradient_vanishes_or_is_not_finite():
    grad = np.array([[0.0, 0.0], [np.inf, 1.0], [np.nan, 1.0]])
    state = PhaseState(x=np.zeros((3, 2)), v=np.zeros((3, 2)), energy=np.zeros(3), grad=grad)
    law = GradientLevelLaw(0.5, 2.0, 2.0, -2, 4)
    weights = np.exp(law.log_weights(state))
    np.testing.assert_allclose(weights.sum(axis=1), 1.0, rtol=1e-12)
    assert np.all(weights > 0)
    assert weights[0].argmax() == 0 and weights[1].argmax() == 6 and weights[2].argmax() == 6


def test_the_draws_follow_the_law():
    kernel = span_kernel()
    law, states = kernel.map.law, _states(kernel, n=4)
    one = attrs.evolve(
        states.inner,
        **{f: np.repeat(getattr(states.inner, f)[1:2], 40_000, axis=0) for f in ("x", "v", "grad")},
        energy=np.repeat(states.inner.energy[1:2], 40_000),
    )
    drawn = law.sample(one, np.random.default_rng(3))
    freq = np.bincount(drawn + 2, minlength=5) / drawn.size
    probs = np.exp(law.log_weights(one)[0])
    se = np.sqrt(probs * (1 - probs) / drawn.size)
    assert np.all(np.abs(freq - probs) < 5 * se), (freq, probs)


def test_a_span_rung_is_a_plain_leapfrog_at_each_level():
    kernel = span_kernel(0.4)
    states = _states(kernel, n=7)
    states = attrs.evolve(states, alpha=np.array([-2, -1, 0, 1, 2, -1, 0]))
    rung = kernel.map.forward(states)
    for i, level in enumerate(states.alpha.tolist()):
        eps, n = (0.4 / 2**level, 2 * 2**level) if level >= 0 else (0.4, 2 * 2**-level)
        one = Leapfrog(FUNNEL, eps, n).integrate(
            states.inner.x[i : i + 1], states.inner.v[i : i + 1], states.inner.grad[i : i + 1]
        )
        np.testing.assert_array_equal(rung.inner.x[i], one.x[0])
        np.testing.assert_array_equal(rung.inner.v[i], one.v[0])


def test_at_levels_from_zero_it_is_the_refined_leapfrog():
    span = SpanLeapfrog(FUNNEL, 0.3, n_steps=3)
    refined = RefinedLeapfrog(FUNNEL, 0.3, n_steps=3)
    states = _states(span_kernel(0.3), n=6).inner
    levels = np.array([0, 1, 2, 0, 3, 1])
    a, b = span.forward(states, levels), refined.forward(states, levels)
    np.testing.assert_array_equal(a.x, b.x)
    np.testing.assert_array_equal(span.cost_of(states, levels), refined.cost_of(states, levels))


def test_cost_of_counts_the_map_and_the_law_at_the_new_rung():
    counting = GradientCounter(FUNNEL)
    kernel = span_lahmc(counting, 0.5, n_steps=2, beta=1.0, min_level=-2, max_level=2)
    states = _states(kernel, n=16)
    states = attrs.evolve(states, alpha=np.tile(np.arange(-2, 3), 4)[:16])
    for i in range(16):
        one = type(states)(
            attrs.evolve(
                states.inner,
                **{f: getattr(states.inner, f)[i : i + 1] for f in ("x", "v", "energy", "grad")},
            ),
            states.alpha[i : i + 1],
        )
        counting.rows = 0
        kernel.map.log_density(kernel.map.forward(one))
        assert counting.rows == kernel.map.cost_of(one)[0] == 2 * 2 ** abs(int(one.alpha[0]))


def test_a_step_costs_what_the_trace_records():
    counting = GradientCounter(FUNNEL)
    kernel = span_lahmc(counting, 0.5, n_steps=2, beta=0.5, scale=1.0, width=1.0, max_level=2)
    init = FUNNEL.sample(8, np.random.default_rng(1))
    counting.rows = 0
    trace = sample(kernel, init, 30, seed=2, warmup=0, checks=False)
    prepare_rows = 8  # Leapfrog.prepare evaluates the gradient once per chain
    assert counting.rows == int(np.sum(trace.grad_evals)) + prepare_rows


def test_the_constructor_adapts_what_it_is_not_given():
    target = IllConditionedGaussian(3, log_condition=1)
    assert span_lahmc(target).adapt == {"step_size", "inverse_mass", "n_leapfrog", "beta"}
    assert span_lahmc(target, n_steps=8, beta=1.0).adapt == {"step_size", "inverse_mass"}
    assert span_lahmc(target, 0.3).adapt == {"n_leapfrog", "beta"}
    kernel = span_lahmc(target)
    assert kernel.map.law.step_size == kernel.map.family.step_size
    assert kernel.map.law.metric is kernel.map.family.metric
    assert isinstance(
        kernel.map.adaptation(kernel, Warmup(200), target.sample(4, np.random.default_rng(0))),
        HMCAdaptation,
    )  # the leapfrog family's warm-up, not the probe-capped one


@pytest.mark.parametrize("backend", ["numpy", pytest.param("jax", marks=pytest.mark.slow)])
def test_warm_up_sets_the_step_mass_length_and_beta_in_the_family_and_the_law(backend):
    target = IllConditionedGaussian(3, log_condition=1)
    init = target.sample(4, np.random.default_rng(0))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        trace = sample(span_lahmc(target), init, 20, seed=1, warmup=100, backend=backend)
    warm = trace.warmup
    assert warm.adapted == ("step_size", "inverse_mass", "n_leapfrog", "beta")
    assert 0 < warm.beta <= 1 and warm.n_leapfrog >= 1 and warm.step_size > 0
    kernel = apply_warmup(span_lahmc(target), warm)
    assert kernel.map.law.step_size == kernel.map.family.step_size == warm.step_size
    assert kernel.map.law.metric is kernel.map.family.metric
    assert kernel.map.family.n_steps == warm.n_leapfrog


@pytest.mark.parametrize(
    "build",
    [
        lambda: GradientLevelLaw(0.1, min_level=2, max_level=1),
        lambda: GradientLevelLaw(0.1, width=0.0),
        lambda: GradientLevelLaw(0.1, scale=-1.0),
        lambda: GradientLevelLaw(0.1, min_level=0.5),
        lambda: GradientLevelLaw(np.inf),
        lambda: span_lahmc(FUNNEL, n_steps=0),
        lambda: span_lahmc(FUNNEL, beta=1.5),
        lambda: span_lahmc(FUNNEL, look_ahead=0),
    ],
)
def test_bad_settings_are_refused(build):
    with pytest.raises(ValueError):
        build()
