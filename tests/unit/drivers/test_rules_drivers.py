"""The new rules run through both drivers with the exact one-step law, and report what they did."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from ladder_mcmc import Ladder, LookAhead, Yoshida4, sample
from ladder_mcmc.ladder import (
    LookAheadRule,
    PersistentUniformRule,
    ReducedFlipLookAheadRule,
    ReducedFlipRule,
)
from ladder_mcmc.models import RoughWell
from ladder_mcmc.verify import FiniteLadder, exact_transition_matrix, extended_index

LADDER = FiniteLadder([3, 0, 4, 1, 2], [2, 5, 1, 4, 3])
CHAINS = 20_000


@pytest.mark.parametrize("schedule", ["ragged", "synchronous"])
@pytest.mark.parametrize(
    ("rule", "exact_rule"),
    [
        (ReducedFlipRule(), ReducedFlipRule()),
        (ReducedFlipLookAheadRule(3), ReducedFlipLookAheadRule(3)),
        # averaged over its uniform (drawn uniformly by init), one step is LAHMC's
        (PersistentUniformRule(3), LookAheadRule(3)),
    ],
    ids=["RF", "RFLA3", "PU3"],
)
@pytest.mark.parametrize("start", [(1, 1), (4, -1)])
def test_one_step_frequencies_match_the_exact_row(schedule, rule, exact_rule, start):
    """20 000 chains from one extended state: destination frequencies vs the exact row.

    Tolerance: 5 binomial standard errors per destination (about 1e-6 per cell
    of being exceeded by chance for a correct driver).
    """
    i, d = start
    kernel = Ladder(LADDER, rule)
    rng = np.random.default_rng(7)
    ks = kernel.init(np.full(CHAINS, i), rng, direction=np.full(CHAINS, d))
    trace = sample(kernel, ks, 1, seed=rng, schedule=schedule, warmup=0)
    final = trace.final
    dest = extended_index(final.state, final.direction, LADDER.n)
    freq = np.bincount(dest, minlength=2 * LADDER.n) / CHAINS
    row = exact_transition_matrix(exact_rule, LADDER)[extended_index(i, d, LADDER.n)]
    p = row.astype(float)
    se = np.sqrt(p * (1 - p) / CHAINS)
    assert np.all(np.abs(freq - p) <= 5 * se + 1e-12), (freq, p)


def test_reduced_flip_trace_reports_stays_and_backward_rungs():
    target = RoughWell()
    rng = np.random.default_rng(0)
    kernel = Ladder(Yoshida4(target, 1.0, 4), ReducedFlipRule())
    trace = sample(kernel, target.sample(50, rng), 200, seed=1, warmup=0)
    fr = trace.transition_fractions()
    assert set(fr) == {"F", "L1", "stay"}
    assert sum(fr.values()) == pytest.approx(1.0)
    # a chain that rejected L computed the backward rung too: 2 map applications
    rejected = trace.rungs != 1
    assert np.all(trace.n_moves[rejected] == 2)
    assert np.all(trace.n_moves[~rejected] == 1)
    # flips are rarer than Metropolis' on the same target and map (measured, not exact)
    mh = sample(LookAhead(kernel.map, 1), target.sample(50, rng), 200, seed=1, warmup=0)
    assert fr["F"] < mh.transition_fractions()["F"]


def test_persistent_uniform_carry_survives_the_ragged_driver():
    rng = np.random.default_rng(3)
    kernel = Ladder(LADDER, PersistentUniformRule(2, delta=Fraction(1, 4)))
    trace = sample(kernel, rng.integers(0, 5, 30), 40, seed=4, warmup=0)
    carry = trace.final.carry
    assert carry.shape == (30,) and np.all((-1 <= carry) & (carry < 1))


def test_rules_describe_themselves():
    assert PersistentUniformRule(2, 0.05).describe() == {
        "rule": "PersistentUniformRule",
        "max_rungs": 2,
        "delta": "0.05",
    }
    assert ReducedFlipRule().describe() == {"rule": "ReducedFlipRule", "max_rungs": 1}
    with pytest.raises(TypeError):
        ReducedFlipRule(2)  # K is fixed to 1
