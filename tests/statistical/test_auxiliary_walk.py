"""A parameter drawn from a state-dependent law keeps the target on floats (docs/design.md §14).

* the walk of ``tests/unit/auxiliary_walk.py`` (``x → x + α v``, ``α`` Gamma with a mean
  that shrinks with ``|x|``, target ``N(0, 1)``): one-step invariance (50 000 chains,
  every rule, Kolmogorov–Smirnov on ``x``, ``v``, ``α`` and projections, total false
  alarm 1e-6) and its map contract; ``tests/mutation/test_auxiliary_mutants.py`` shows the
  same check failing when ``p(α | ζ)`` is dropped from the density;
* a family that changes volume (the log-scale walk ``x → x e^{α v}`` on a Gamma target,
  ``α`` drawn given ``x``): its declared Jacobian passes through the ``AuxiliaryMap``
  (``check_map`` against finite differences over ``x``, ``v`` and ``α``) and one step keeps
  the target.
"""

from __future__ import annotations

import numpy as np
import pytest
from auxiliary_walk import (
    GAMMA,
    LAW,
    LogScaleFamily,
    LogStepLaw,
    StepWalk,
    draw_exact,
    walk_kernel,
)

from ladder_mcmc.ladder import (
    AuxiliaryMap,
    AuxiliaryRefresh,
    InnerRefresh,
    Ladder,
    LogScaleRefresh,
    LookAheadRule,
    PersistentUniformRule,
    ReducedFlipLookAheadRule,
)
from ladder_mcmc.verify import assert_map, assert_one_step_invariance


def test_the_walk_is_a_reversible_map():
    rng = np.random.default_rng(0)
    walk = AuxiliaryMap(StepWalk(), LAW)
    report = assert_map(walk, walk.prepare(draw_exact(16, rng), rng))
    assert report.law_flip_error == 0
    assert np.abs(report.log_det_jacobian).max() < report.volume_tolerance  # over x, v, α


@pytest.mark.parametrize(
    "rule",
    [LookAheadRule(1), LookAheadRule(4), ReducedFlipLookAheadRule(2), PersistentUniformRule(3)],
    ids=lambda r: f"{type(r).__name__}({r.max_rungs})",
)
def test_one_step_keeps_the_joint_target(rule):
    kernel = walk_kernel()
    kernel = Ladder(kernel.map, rule, kernel.refresh)
    report = assert_one_step_invariance(kernel, draw_exact, n_chains=50_000, seed=3)
    assert report.moved_fraction > 0.3


# ---------------------------------------------------------------- a family that changes volume
def test_a_declared_jacobian_passes_through():
    rng = np.random.default_rng(1)
    law = LogStepLaw()
    scaled = AuxiliaryMap(LogScaleFamily(), law)
    assert not scaled.volume_preserving
    states = scaled.prepare(GAMMA.sample(8, rng), rng)
    np.testing.assert_array_equal(
        scaled.log_det_jacobian(states), states.alpha * states.inner.v.sum(axis=1)
    )
    report = assert_map(scaled, states)  # the declared Jacobian against finite differences
    assert report.declared_log_det_jacobian is not None
    kernel = Ladder(
        scaled, LookAheadRule(3), InnerRefresh(LogScaleRefresh(0.5)) + AuxiliaryRefresh(law)
    )
    assert_one_step_invariance(kernel, GAMMA.sample, n_chains=20_000, seed=4)
