"""One-step invariance on continuous targets for the new rules and maps.

Each test starts 20 000 chains at exact draws of the extended target, applies
one kernel step and compares with fresh exact draws by Kolmogorov–Smirnov tests
(``ladder_mcmc.verify.invariance.assert_one_step_invariance``: Bonferroni-corrected, total
false-alarm probability 1e-6 for a correct kernel; the kernel must move at
least 1% of the chains). Fixed seeds; each test takes about a second.
"""

from __future__ import annotations

import numpy as np
import pytest

from ladder_mcmc import Ladder, MomentumRefresh
from ladder_mcmc.hamiltonian import HarmonicFlow, Leapfrog, McLachlan2, Yoshida4
from ladder_mcmc.ladder import (
    LookAheadRule,
    PersistentUniformRule,
    ReducedFlipLookAheadRule,
    ReducedFlipRule,
)
from ladder_mcmc.models import FunctionTarget, IllConditionedGaussian, RoughWell
from ladder_mcmc.verify import assert_one_step_invariance, default_features

ROUGH = RoughWell()
GAUSS = IllConditionedGaussian(2, log_condition=2)


def quartic_draws(n: int, rng: np.random.Generator) -> np.ndarray:
    """Exact draws of p(x) ∝ exp(−x⁴/4) in 1-d by rejection from N(0, 1).

    exp(−x⁴/4) / exp(−x²/2) ≤ exp(1/4), so accept with exp(x²/2 − x⁴/4 − 1/4).
    """
    out = np.empty(0)
    while out.size < n:
        x = rng.standard_normal(2 * n)
        keep = rng.random(2 * n) < np.exp(0.5 * x**2 - 0.25 * x**4 - 0.25)
        out = np.concatenate([out, x[keep]])
    return out[:n, None]


QUARTIC = FunctionTarget(lambda x: 0.25 * (x**4).sum(1), lambda x: x**3, dim=1)


def phase_features(map_, ks) -> np.ndarray:
    """x and d·v per coordinate, plus x·(d·v) summed: the sign of motion relative to x.

    A rule that moves chains without flipping when it should leaves the
    marginals of x and d·v nearly alone but shifts x·(d·v).
    """
    _, f = default_features(map_, ks)
    x = np.asarray(ks.state.x)
    pv = ks.direction[:, None] * np.asarray(ks.state.v)
    return np.concatenate([f, (x * pv).sum(axis=1, keepdims=True)], axis=1)


@pytest.mark.parametrize(
    "rule",
    [ReducedFlipRule(), ReducedFlipLookAheadRule(4), PersistentUniformRule(4)],
    ids=lambda r: type(r).__name__,
)
@pytest.mark.parametrize("target", [ROUGH, GAUSS], ids=["rough_well", "gaussian"])
def test_rules_keep_the_target_for_one_leapfrog_step(rule, target):
    kernel = Ladder(Leapfrog(target, 1.0, 10), rule, MomentumRefresh(0.1))

    def features(ks):
        f = phase_features(kernel.map, ks)
        if ks.carry is None:
            return f
        # the carried uniform must stay U[0, 1) and independent of ζ
        u = np.abs(ks.carry)
        return np.concatenate([f, u[:, None], (u * np.exp(ks.log_density))[:, None]], axis=1)

    assert_one_step_invariance(kernel, target.sample, n_chains=20_000, seed=3, features=features)


@pytest.mark.parametrize("k", [1, 4])
def test_harmonic_flow_ladder_keeps_a_quartic_target(k):
    kernel = Ladder(
        HarmonicFlow(QUARTIC, omega=1.0, time=1.0), LookAheadRule(k), MomentumRefresh(0.2)
    )
    report = assert_one_step_invariance(
        kernel,
        quartic_draws,
        n_chains=20_000,
        seed=4,
        features=lambda ks: phase_features(kernel.map, ks),
    )
    assert report.moved_fraction > 0.5


@pytest.mark.parametrize("cls", [Yoshida4, McLachlan2])
def test_splitting_integrators_keep_the_target_in_lahmc(cls):
    kernel = Ladder(cls(ROUGH, 0.8, 5), LookAheadRule(4), MomentumRefresh(0.1))
    assert_one_step_invariance(kernel, ROUGH.sample, n_chains=20_000, seed=5)


def test_invariance_check_catches_a_rule_that_never_flips():
    """Mutation: 'stay instead of flip' without the backward rung (not invariant) is caught.

    With the harmonic flow on the quartic target, rejected chains are those
    moving outwards; keeping their direction instead of flipping shifts the law
    of x·(d·v) (measured KS p-value ~1e-30 at this seed, against a threshold
    ~1e-7; the correct K = 1 rule gives p ~0.2 on the same states).
    """

    class StayNotFlip(ReducedFlipLookAheadRule):
        positions = (1,)
        outcomes = (1,)

    kernel = Ladder(HarmonicFlow(QUARTIC, omega=1.0, time=1.0), StayNotFlip(1), None)
    with pytest.raises(AssertionError, match="one step changed"):
        assert_one_step_invariance(
            kernel,
            quartic_draws,
            n_chains=20_000,
            seed=3,
            features=lambda ks: phase_features(kernel.map, ks),
        )
