"""Maps that change volume under every driver (docs/design.md §13).

* both schedules give the same trace, bit for bit, on a measured ladder and on the
  log-scale walk, for every rule (forward, backward and restarted rungs, a carried
  uniform), with and without checkpoints;
* a map that declares a Jacobian is never run on the leapfrog fast path, whatever
  else it declares;
* a non-finite log Jacobian is density zero: never taken, counted like a non-finite
  energy, the same under both schedules.
"""

from __future__ import annotations

from fractions import Fraction

import attrs
import numpy as np
import pytest
from driver_equivalence import assert_same_trace

from ladder_mcmc import DirectionRefresh, Ladder, Leapfrog, MomentumRefresh, sample
from ladder_mcmc.drivers import driver_for, run_ragged
from ladder_mcmc.ladder import (
    LogScaleRefresh,
    LogScaleWalk,
    LookAheadRule,
    PersistentUniformRule,
    ReducedFlipLookAheadRule,
    ReducedFlipRule,
)
from ladder_mcmc.models import GammaTarget, IllConditionedGaussian
from ladder_mcmc.verify import MeasuredLadder

RULES = [
    LookAheadRule(3),
    ReducedFlipRule(),
    ReducedFlipLookAheadRule(2),
    PersistentUniformRule(2, delta=0.25),
]
LADDER = MeasuredLadder([1, 3, 0, 4, 2], [2, 2, 5, 5, 1], [1, 1, 3, 3, 2], flip=[1, 0, 3, 2, 4])
WALK = LogScaleWalk(GammaTarget(2.0, 1.5, dim=2), 0.8)


def _cases():
    for rule in RULES:
        yield Ladder(LADDER, rule, DirectionRefresh(0.5)), np.arange(5).repeat(3)
        yield (
            Ladder(WALK, rule, LogScaleRefresh(0.3)),
            GammaTarget(2.0, 1.5, dim=2).sample(12, np.random.default_rng(0)),
        )


@pytest.mark.parametrize(
    ("kernel", "init"),
    list(_cases()),
    ids=[f"{m}-{type(r).__name__}" for r in RULES for m in ("measured", "walk")],
)
def test_schedules_and_checkpoints_give_the_same_trace(kernel, init):
    ragged = sample(kernel, init, 40, seed=7, warmup=0)
    assert_same_trace(sample(kernel, init, 40, seed=7, schedule="synchronous", warmup=0), ragged)
    assert_same_trace(sample(kernel, init, 40, seed=7, warmup=0, checkpoint_every=3), ragged)
    assert len(np.unique(ragged.rungs)) > 1


@attrs.frozen(eq=False)
class StretchingLeapfrog(Leapfrog):
    """A leapfrog subclass that claims the fast path but declares a Jacobian."""

    plain_leapfrog = True

    def log_det_jacobian(self, state):
        return np.zeros(state.x.shape[0])


def test_a_map_with_a_jacobian_never_takes_the_leapfrog_fast_path():
    target = IllConditionedGaussian(2, log_condition=1)
    plain = Ladder(Leapfrog(target, 0.5, 3), LookAheadRule(2), MomentumRefresh(0.5))
    assert driver_for(plain, "ragged") is not run_ragged  # control: the fast path
    stretching = Ladder(StretchingLeapfrog(target, 0.5, 3), LookAheadRule(2), MomentumRefresh(0.5))
    assert not stretching.map.volume_preserving
    assert driver_for(stretching, "ragged") is run_ragged


class HoleyLadder(MeasuredLadder):
    """``log_det_jacobian`` is NaN at state 2 and +inf at state 4 (on the 5-cycle)."""

    def log_det_jacobian(self, state):
        out = super().log_det_jacobian(state).copy()
        state = np.asarray(state)
        return np.where(state == 2, np.nan, np.where(state == 4, np.inf, out))


@pytest.mark.parametrize("rule", [LookAheadRule(3), ReducedFlipLookAheadRule(2)])
def test_a_non_finite_jacobian_is_density_zero_and_counted(rule):
    ladder = HoleyLadder([1, 2, 3, 4, 0], [1, 1, 1, 1, 1], [1, 2, 1, 2, 1])
    kernel = Ladder(ladder, rule, DirectionRefresh(Fraction(1, 2)))
    init = np.array([0, 1, 3] * 4)
    ragged = sample(kernel, init, 60, seed=1, warmup=0)
    assert_same_trace(sample(kernel, init, 60, seed=1, schedule="synchronous", warmup=0), ragged)
    assert ragged.non_finite_rungs.sum() > 0
    # the map applications 2 → 3 and 4 → 0 (and back) have non-finite Jacobians, so no
    # rung across them is taken: the chains stay on {0, 1, 2} or on {3, 4}
    states = np.concatenate([init[None], ragged.states])
    start = np.isin(init, [0, 1])
    assert np.all(np.isin(states[:, start], [0, 1, 2]))
    assert np.all(np.isin(states[:, ~start], [3, 4]))
    assert len(np.unique(states)) == 5
