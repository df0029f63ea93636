"""Mutants of the level drawn from the gradient (``span_lahmc``), and the checks that catch them.

* ``SignReadingLaw``: the law's centre moves up one level where the momentum points
  uphill (``v · ∇E > 0``): it reads the momentum's sign, so ``p(ℓ | F ζ) ≠ p(ℓ | ζ)``.
  The map contract (``assert_map``'s law flip-invariance) refuses it; the correct law
  passes with a flip error of exactly 0 (``tests/statistical/test_multiscale_funnel.py``).
* ``StartScaledSpan``: at the negative levels the step is not ``ε`` but ``ε`` scaled by
  the gradient at the trajectory's start, ``ε clip(√d / (ε ‖∇E(x₀)‖), ¼, 4)`` (the step
  grown to the local width where the target is wide): a step chosen from the state inside
  the map, the classic way to lose reversibility (the reversed trajectory starts
  elsewhere and takes another step). The contract's inverse check rejects it. One-step
  invariance from 30 000 exact draws on the 3-d funnel
  (``ε = 0.7``, the correct kernel's setting) does not: the levels below 0 are drawn where
  the gradient is small, and there the wrong step moves the draws too little to show.
* the law dropped from the density (``DroppedLawMap``): one-step invariance catches it,
  in ``tests/mutation/test_multiscale_mutants.py``.
"""

from __future__ import annotations

import attrs
import numpy as np
import pytest
from multiscale_funnel import Funnel, span_kernel

from ladder_mcmc.arrays import namespace
from ladder_mcmc.hamiltonian import GradientLevelLaw, SpanLeapfrog
from ladder_mcmc.ladder import AuxiliaryMap, AuxiliaryRefresh, InnerRefresh, Ladder
from ladder_mcmc.verify import assert_map

FUNNEL = Funnel(3)


@attrs.frozen
class SignReadingLaw(GradientLevelLaw):
    """The centre one level finer where ``v · ∇E > 0`` (the momentum's sign read)."""

    def centre(self, state):
        xp = namespace(state.v, state.grad)
        uphill = xp.sum(state.v * state.grad, axis=1) > 0
        return super().centre(state) + xp.where(uphill, 1.0, 0.0)


@attrs.frozen(eq=False)
class StartScaledSpan(SpanLeapfrog):
    """Negative levels: the step scaled by the gradient at the start (irreversible)."""

    def forward(self, state, alpha):
        eps, n = self.plan(alpha)
        dim = state.x.shape[1]
        norm = np.linalg.norm(state.grad, axis=1)
        local = np.clip(np.sqrt(dim) / (self.step_size * np.maximum(norm, 1e-300)), 0.25, 4.0)
        eps = np.where(np.asarray(alpha) < 0, self.step_size * local, eps)
        return self.run(state, eps[:, None], n)


def _mutant(kernel, family=None, law=None):
    """``kernel`` with its family or law replaced (the refresh's redraw follows the law)."""
    law = law if law is not None else kernel.map.law
    family = family if family is not None else kernel.map.family
    inner = kernel.refresh.parts[0]
    assert isinstance(inner, InnerRefresh)
    return Ladder(AuxiliaryMap(family, law), kernel.rule, inner + AuxiliaryRefresh(law))


def _sign_reading(kernel):
    fields = {f.name: getattr(kernel.map.law, f.name) for f in attrs.fields(GradientLevelLaw)}
    return _mutant(kernel, law=SignReadingLaw(**fields))


def _start_scaled(kernel):
    family = kernel.map.family
    fields = {f.name: getattr(family, f.name) for f in attrs.fields(SpanLeapfrog)}
    return _mutant(kernel, family=StartScaledSpan(**fields))


def _states(kernel, n=16):
    rng = np.random.default_rng(0)
    return kernel.map.prepare(FUNNEL.sample(n, rng), rng), rng


def test_the_contract_catches_a_law_that_reads_the_momentums_sign():
    mutant = _sign_reading(span_kernel(0.3))
    states, rng = _states(mutant)
    with pytest.raises(AssertionError, match="flip"):
        assert_map(mutant.map, states, rng, rtol=1e-10)


def test_the_contract_catches_a_step_chosen_from_the_start():
    mutant = _start_scaled(span_kernel(0.3))
    states, rng = _states(mutant)
    states = attrs.evolve(states, alpha=np.full(16, -1))
    with pytest.raises(AssertionError, match="inverse"):
        assert_map(mutant.map, states, rng, rtol=1e-10)
